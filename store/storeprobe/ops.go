package storeprobe

import (
	"context"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/store"
)

// Store calls, each bounded by Options.OpTimeout.

func (p *prober) get(ctx context.Context, key string) (store.Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.OpTimeout)
	defer cancel()
	return p.s.Get(ctx, key)
}

func (p *prober) put(ctx context.Context, key, value string, cond store.Condition) (store.Version, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.OpTimeout)
	defer cancel()
	return p.s.Put(ctx, key, []byte(value), cond)
}

func (p *prober) del(ctx context.Context, key string, cond store.Condition) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.OpTimeout)
	defer cancel()
	return p.s.Delete(ctx, key, cond)
}

func (p *prober) list(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.OpTimeout)
	defer cancel()
	return p.s.List(ctx, prefix, opts)
}

func (p *prober) txn(ctx context.Context, t store.Transactor, ops []store.TxnOp) ([]store.Version, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.OpTimeout)
	defer cancel()
	return t.Txn(ctx, ops)
}

// mustPut is a setup write: any error is unexpected.
func (p *prober) mustPut(ctx context.Context, key, value string) (store.Version, error) {
	v, err := p.put(ctx, key, value, store.Unconditional)
	if err != nil {
		return "", unexpected(fmt.Sprintf("setup put %q", key), err)
	}
	if v == "" {
		return "", broken("put %q returned the zero version", key)
	}
	return v, nil
}

// expect reads key and requires value and, when v is not "", version v.
func (p *prober) expect(ctx context.Context, key, value string, v store.Version) error {
	e, err := p.get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return broken("%q is gone; want %q", key, value)
	case err != nil:
		return unexpected(fmt.Sprintf("get %q", key), err)
	case string(e.Value) != value:
		return broken("%q holds %q; want %q", key, e.Value, value)
	case v != "" && e.Version != v:
		return broken("%q has version %q; want %q", key, e.Version, v)
	case e.Key != "" && e.Key != key:
		return broken("get %q returned an entry for %q", key, e.Key)
	}
	return nil
}

// expectMissing requires that key does not exist.
func (p *prober) expectMissing(ctx context.Context, key string) error {
	e, err := p.get(ctx, key)
	switch {
	case err == nil:
		return broken("%q exists (holding %q); want it absent", key, e.Value)
	case !errors.Is(err, store.ErrNotFound):
		return unexpected(fmt.Sprintf("get %q", key), err)
	}
	return nil
}

// wantConflict checks the error of a write that had to be refused: nil is
// the dangerous case (said names it), another error is a wrong answer.
func wantConflict(what string, err error, said string) error {
	switch {
	case err == nil:
		return broken("%s succeeded: %s", what, said)
	case !errors.Is(err, store.ErrConflict):
		return fmt.Errorf("%s: got %v; want ErrConflict", what, err)
	}
	return nil
}

// worst returns the first finding that the store is broken, else the first
// other error, else nil.
func worst(errs ...error) error {
	var first error
	for _, err := range errs {
		var b *brokenError
		if errors.As(err, &b) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}
