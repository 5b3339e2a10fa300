package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/latchkey/latchkey/store"
)

// txnRequestOp is one element of a Consul /v1/txn request body; only KV
// operations are accepted.
type txnRequestOp struct {
	KV *struct {
		Verb  string
		Key   string
		Value *string         // base64, as Consul
		Index json.RawMessage // the expected version, a number or a string; 0 means absent
	}
}

// txnOps converts a Consul-shaped transaction into store operations.
func txnOps(ops []txnRequestOp) ([]store.TxnOp, error) {
	out := make([]store.TxnOp, 0, len(ops))
	for i, op := range ops {
		if op.KV == nil {
			return nil, fmt.Errorf("op %d: only KV operations are supported", i)
		}
		kv := op.KV
		var value []byte
		if kv.Value != nil {
			b, err := base64.StdEncoding.DecodeString(*kv.Value)
			if err != nil {
				return nil, fmt.Errorf("op %d: Value is not base64: %v", i, err)
			}
			value = b
		}
		index, err := txnIndex(kv.Index)
		if err != nil {
			return nil, fmt.Errorf("op %d: %v", i, err)
		}
		zero := index == "" || index == "0"
		match := store.IfMatch(store.Version(index))
		if zero {
			match = store.IfMatch("") // no stored key has version 0
		}
		var t store.TxnOp
		switch kv.Verb {
		case "set":
			t = store.PutOp(kv.Key, value, store.Unconditional)
		case "cas":
			t = store.PutOp(kv.Key, value, match)
			if zero {
				t = store.PutOp(kv.Key, value, store.IfAbsent)
			}
		case "delete":
			t = store.DeleteOp(kv.Key, store.Unconditional)
		case "delete-cas":
			// Consul's delete-cas with Index 0 succeeds only when the key
			// is absent, deleting nothing. With another Index, Consul also
			// succeeds on an absent key; here that fails the check.
			t = store.DeleteOp(kv.Key, match)
			if zero {
				t = store.Check(kv.Key, store.IfAbsent)
			}
		case "check-index":
			// As Consul: an absent key fails, whatever the Index.
			t = store.Check(kv.Key, match)
		case "check-not-exists":
			t = store.Check(kv.Key, store.IfAbsent)
		default:
			return nil, fmt.Errorf("op %d: verb %q is not supported (set, cas, delete, delete-cas, check-index, check-not-exists)", i, kv.Verb)
		}
		out = append(out, t)
	}
	return out, nil
}

// txnIndex reads an Index given as a JSON number (Consul) or a string
// (versions of stores whose versions are not numbers).
func txnIndex(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf("Index must be a number or a string: %s", raw)
	}
	return n.String(), nil
}

func runKVTxn(ctx context.Context, e *env, args []string) error {
	f := newKVFlags(e, "txn")
	if err := f.parseArgs(args, 1, 1); err != nil {
		return err
	}
	var r io.Reader = e.stdin
	if name := f.Arg(0); name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("kv txn: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	var req []txnRequestOp
	if err := json.NewDecoder(io.LimitReader(r, maxValueBytes)).Decode(&req); err != nil {
		return usagef("kv txn: %s: not a JSON array of operations: %v", f.Arg(0), err)
	}
	ops, err := txnOps(req)
	if err == nil {
		err = store.ValidateTxn(ops) // a key twice, too many ops, a bad key
	}
	if err != nil {
		return usagef("kv txn: %v", err)
	}
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()
	tx, ok := s.(store.Transactor)
	if !ok || !s.Capabilities().Transactions {
		return failf("kv txn: this store has no multi-key transactions")
	}
	wctx, cancel := settleCtx(ctx)
	versions, err := tx.Txn(wctx, ops)
	cancel()
	if mayHaveApplied(err) {
		return unknownWrite(ctx, "kv txn", "applying the transaction", "latchkey kv get on its keys", err)
	}
	var te *store.TxnError
	if errors.As(err, &te) && errors.Is(err, store.ErrConflict) {
		return failf("kv txn: not applied: op %d (%s %q) failed its check; nothing was written", te.Index, ops[te.Index].Kind, te.Key)
	}
	if err != nil {
		return fmt.Errorf("kv txn: %w", err)
	}
	type result struct {
		Key         string
		ModifyIndex json.RawMessage `json:",omitempty"`
	}
	results := make([]result, len(ops))
	for i, op := range ops {
		results[i] = result{Key: op.Key, ModifyIndex: versionJSON(versions[i])}
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"Results": results})
}

// versionJSON is a version as JSON: a number, as Consul prints ModifyIndex,
// when it is one (Consul, etcd, latchkey serve), else a string; nil for
// none.
func versionJSON(v store.Version) json.RawMessage {
	if v == "" {
		return nil
	}
	if _, err := strconv.ParseUint(string(v), 10, 64); err == nil {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(string(v))
	return b
}
