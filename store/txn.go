package store

import (
	"context"
	"fmt"
)

// OpKind is what one operation of a transaction does.
type OpKind uint8

const (
	// OpCheck checks Cond against the key and writes nothing.
	OpCheck OpKind = iota + 1
	// OpPut writes Value under Key if Cond holds.
	OpPut
	// OpDelete deletes Key if Cond holds (IfAbsent is not allowed).
	OpDelete
)

func (k OpKind) String() string {
	switch k {
	case OpCheck:
		return "check"
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// TxnOp is one operation of a transaction.
type TxnOp struct {
	Kind  OpKind
	Key   string
	Value []byte    // OpPut only
	Cond  Condition // checked against the state before the transaction
}

// Check returns an OpCheck of cond on key.
func Check(key string, cond Condition) TxnOp { return TxnOp{Kind: OpCheck, Key: key, Cond: cond} }

// PutOp returns an OpPut of value on key under cond.
func PutOp(key string, value []byte, cond Condition) TxnOp {
	return TxnOp{Kind: OpPut, Key: key, Value: value, Cond: cond}
}

// DeleteOp returns an OpDelete of key under cond.
func DeleteOp(key string, cond Condition) TxnOp { return TxnOp{Kind: OpDelete, Key: key, Cond: cond} }

// MaxTxnOps is the most operations one transaction may hold (Consul's
// limit).
const MaxTxnOps = 128

// Transactor is implemented by backends with real multi-key transactions
// (Capabilities.Transactions).
type Transactor interface {
	// Txn applies ops all or nothing. Every condition is checked against
	// the state before the transaction; a key may appear in at most one
	// op. On success it returns, for each op, the key's new version (for
	// OpPut) or the zero Version. When a condition fails it must return an
	// error matching ErrConflict, wrapped in a *TxnError naming the first
	// failing op, and change nothing.
	Txn(ctx context.Context, ops []TxnOp) ([]Version, error)
}

// TxnError says which operation of a transaction failed.
type TxnError struct {
	Index int // index of the failing op in the request
	Key   string
	Err   error // matches ErrConflict (or another sentinel)
}

func (e *TxnError) Error() string {
	return fmt.Sprintf("txn op %d on %q: %v", e.Index, e.Key, e.Err)
}

func (e *TxnError) Unwrap() error { return e.Err }

// ValidateTxn checks the shape of a transaction before a backend applies
// it: a known kind and a valid key for every op, no key twice, no IfAbsent
// delete, at most MaxTxnOps ops. Backends call it first.
func ValidateTxn(ops []TxnOp) error {
	if len(ops) == 0 {
		return fmt.Errorf("%w: empty transaction", ErrUnsupported)
	}
	if len(ops) > MaxTxnOps {
		return fmt.Errorf("%w: %d operations, at most %d", ErrUnsupported, len(ops), MaxTxnOps)
	}
	seen := make(map[string]bool, len(ops))
	for i, op := range ops {
		if err := ValidateKey(op.Key); err != nil {
			return &TxnError{Index: i, Key: op.Key, Err: err}
		}
		if seen[op.Key] {
			return &TxnError{Index: i, Key: op.Key, Err: fmt.Errorf("%w: key appears twice", ErrUnsupported)}
		}
		seen[op.Key] = true
		switch op.Kind {
		case OpCheck, OpPut:
		case OpDelete:
			if op.Cond.IsAbsent() {
				return &TxnError{Index: i, Key: op.Key, Err: fmt.Errorf("%w: delete if-absent", ErrUnsupported)}
			}
		default:
			return &TxnError{Index: i, Key: op.Key, Err: fmt.Errorf("%w: op kind %d", ErrUnsupported, op.Kind)}
		}
	}
	return nil
}
