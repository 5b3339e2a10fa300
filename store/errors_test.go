package store_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/latchkey/latchkey/store"
)

func TestOpErrorFormat(t *testing.T) {
	tests := []struct {
		err  *store.OpError
		want string
	}{
		{store.NewOpError("memstore", "get", "jobs/a", store.ErrNotFound, nil),
			`memstore: get "jobs/a": not found`},
		{&store.OpError{Op: "put", Key: "jobs/a", Backend: "s3store", Status: 412, Code: "PreconditionFailed", Kind: store.ErrConflict},
			`s3store: put "jobs/a": precondition failed (status 412 PreconditionFailed)`},
		{&store.OpError{Op: "put", Key: "k", Backend: "consulstore", Status: 200, Kind: store.ErrConflict},
			`consulstore: put "k": precondition failed (status 200)`},
		{store.NewOpError("filestore", "delete", "k", store.ErrTransient, fs.ErrPermission),
			`filestore: delete "k": transient failure: permission denied`},
		// A key-rule error names the key once, with why it is bad.
		{store.NewOpError("filestore", "get", "a//b", store.ErrInvalidKey, store.ValidateKey("a//b")),
			`filestore: get "a//b": invalid key: empty path segment (leading, trailing or doubled '/')`},
		{store.NewOpError("memstore", "list", "a//", store.ErrInvalidKey, store.ValidatePrefix("a//")),
			`memstore: list "a//": invalid key: empty path segment (leading, trailing or doubled '/')`},
		{store.NewOpError("memstore", "txn", "a", store.ErrInvalidKey, store.ValidateKey("b/")),
			`memstore: txn "a": invalid key: invalid key "b/": empty path segment (leading, trailing or doubled '/')`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestOpErrorMatchesKindAndCause(t *testing.T) {
	err := fmt.Errorf("lease: acquire: %w", store.NewOpError("s3store", "put", "k", store.ErrUnknownOutcome, os.ErrDeadlineExceeded))
	if !errors.Is(err, store.ErrUnknownOutcome) {
		t.Error("wrapped OpError does not match its Kind")
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Error("wrapped OpError does not match its cause")
	}
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrTransient) {
		t.Error("OpError matches a sentinel it is not")
	}
	var oe *store.OpError
	if !errors.As(err, &oe) || oe.Backend != "s3store" || oe.Key != "k" {
		t.Errorf("errors.As found %+v", oe)
	}
	if nilCause := store.NewOpError("m", "get", "k", store.ErrNotFound, nil); len(nilCause.Unwrap()) != 1 {
		t.Errorf("OpError with no cause unwraps to %v", nilCause.Unwrap())
	}
}

func TestTxnErrorMatchesThroughOpError(t *testing.T) {
	te := &store.TxnError{Index: 2, Key: "c", Err: store.ErrConflict}
	if got, want := te.Error(), `txn op 2 on "c": precondition failed`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	// memstore's shape: an OpError whose cause is the TxnError.
	err := fmt.Errorf("publish: %w", store.NewOpError("memstore", "txn", "c", store.ErrConflict, te))
	if !errors.Is(err, store.ErrConflict) {
		t.Error("does not match ErrConflict")
	}
	var got *store.TxnError
	if !errors.As(err, &got) || got.Index != 2 || got.Key != "c" {
		t.Errorf("errors.As found %+v, want op 2 on c", got)
	}
	// A bare TxnError matches its Err.
	if !errors.Is(te, store.ErrConflict) {
		t.Error("TxnError does not unwrap to its Err")
	}
}

// Every sentinel is distinct, so "one condition, one error" holds.
func TestSentinelsAreDistinct(t *testing.T) {
	all := []error{store.ErrNotFound, store.ErrConflict, store.ErrTransient, store.ErrUnknownOutcome,
		store.ErrUnsupported, store.ErrInvalidKey, store.ErrClosed}
	for i, a := range all {
		for j, b := range all {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v matches %v", a, b)
			}
		}
	}
}
