package store

import "context"

// Guard is the check every backend makes before an operation touches
// anything, so that the contract's rules on a closed store, a done context
// and a bad key are enforced the same way by every backend. In this order,
// it returns an *OpError of backend, op and key matching:
//
//   - ErrClosed when closed is true (the store was closed);
//   - ErrTransient, wrapping ctx's error, when ctx is done: nothing was
//     attempted, so the operation may be retried as is with a live context;
//   - ErrInvalidKey, saying why, when key breaks ValidateKey.
//
// It returns nil when the operation may go ahead. A backend with a tighter
// limit of its own (a key prefix counted in an object name) checks it after
// Guard.
func Guard(ctx context.Context, closed bool, backend, op, key string) error {
	return guard(ctx, closed, backend, op, key, ValidateKey)
}

// GuardPrefix is Guard for the prefix of a List: the key rules are those of
// ValidatePrefix.
func GuardPrefix(ctx context.Context, closed bool, backend, op, prefix string) error {
	return guard(ctx, closed, backend, op, prefix, ValidatePrefix)
}

// GuardKeyOrPrefix is GuardPrefix when isPrefix (key is the prefix of a
// List) and Guard otherwise: for a backend whose one check serves both.
func GuardKeyOrPrefix(ctx context.Context, closed bool, backend, op, key string, isPrefix bool) error {
	if isPrefix {
		return GuardPrefix(ctx, closed, backend, op, key)
	}
	return Guard(ctx, closed, backend, op, key)
}

func guard(ctx context.Context, closed bool, backend, op, key string, validate func(string) error) error {
	if closed {
		return NewOpError(backend, op, key, ErrClosed, nil)
	}
	if err := ctx.Err(); err != nil {
		return NewOpError(backend, op, key, ErrTransient, err)
	}
	if err := validate(key); err != nil {
		return NewOpError(backend, op, key, ErrInvalidKey, err)
	}
	return nil
}
