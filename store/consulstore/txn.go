package consulstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/store"
)

// txnResult is the outcome of one /v1/txn: the results when it applied
// (200), or its first error when it did not (409).
type txnResult struct {
	results api.TxnResults
	failed  *api.TxnError
}

// txn sends ops to /v1/txn. A 409 is a result (failed set), not an error;
// every other failure is an *store.OpError mapped by kindOf.
func (s *Store) txn(ctx context.Context, op, key string, ops api.TxnOps) (txnResult, error) {
	var resp api.TxnResponse
	err := s.do(ctx, true, 0, func(ctx context.Context, c *api.Client) error {
		wo := (&api.WriteOptions{Datacenter: s.opts.Datacenter}).WithContext(ctx)
		_, err := c.Raw().Write("/v1/txn", ops, &resp, wo)
		return err
	})
	if err == nil {
		return txnResult{results: resp.Results}, nil
	}
	status, body := statusOf(err)
	if status != http.StatusConflict {
		return txnResult{}, s.opError(ctx, op, key, true, err)
	}
	var failed api.TxnResponse
	if jerr := json.Unmarshal([]byte(body), &failed); jerr != nil || len(failed.Errors) == 0 {
		return txnResult{}, &store.OpError{Op: op, Key: key, Backend: backend, Status: status, Kind: store.ErrUnknownOutcome,
			Err: fmt.Errorf("unreadable 409 body %q", body)}
	}
	first := failed.Errors[0]
	for _, e := range failed.Errors {
		if e != nil && (first == nil || e.OpIndex < first.OpIndex) {
			first = e
		}
	}
	// Consul reports ACL denials inside a txn as 409 errors, not 403:
	// they are not a lost condition.
	for _, e := range failed.Errors {
		if e != nil && isACLDenial(e.What) {
			return txnResult{}, &store.OpError{Op: op, Key: key, Backend: backend, Status: status, Kind: store.ErrUnsupported,
				Err: errors.Join(ErrPermissionDenied, errors.New(e.What))}
		}
	}
	if first == nil {
		return txnResult{}, &store.OpError{Op: op, Key: key, Backend: backend, Status: status, Kind: store.ErrUnknownOutcome,
			Err: fmt.Errorf("409 without errors: %q", body)}
	}
	return txnResult{failed: first}, nil
}

// Txn implements store.Transactor with one /v1/txn. Every op maps onto
// Consul verbs (a conditional delete takes two: check-index and delete),
// so the transaction applies all or nothing at one index.
func (s *Store) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	if err := store.ValidateTxn(ops); err != nil {
		return nil, s.txnShapeError(err)
	}
	if err := store.Guard(ctx, s.closed.Load(), backend, "txn", ops[0].Key); err != nil {
		return nil, err
	}
	wire, origin, err := s.wireOps(ops)
	if err != nil {
		return nil, err
	}
	if len(wire) == 0 { // only unconditional checks: nothing to ask
		return make([]store.Version, len(ops)), nil
	}
	res, err := s.txn(ctx, "txn", "", wire)
	if errors.Is(err, store.ErrUnknownOutcome) {
		if vs, ok := s.resolveTxn(ctx, ops, wire); ok {
			return vs, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if res.failed != nil {
		return nil, conflictError(ops, origin, res.failed)
	}
	return s.putVersions(ops, res.results)
}

// wireOps translates ops into Consul txn ops; origin[j] is the index in
// ops of wire op j. It refuses a value over Options.MaxValueSize and a
// translation longer than store.MaxTxnOps.
func (s *Store) wireOps(ops []store.TxnOp) (wire api.TxnOps, origin []int, err error) {
	for i, op := range ops {
		if op.Kind == store.OpPut && len(op.Value) > s.opts.MaxValueSize {
			return nil, nil, &store.TxnError{Index: i, Key: op.Key, Err: store.NewOpError(backend, "txn", op.Key, store.ErrUnsupported,
				fmt.Errorf("value of %d bytes exceeds the limit of %d bytes", len(op.Value), s.opts.MaxValueSize))}
		}
		for _, kv := range s.kvOps(op) {
			wire = append(wire, &api.TxnOp{KV: kv})
			origin = append(origin, i)
		}
	}
	if len(wire) > store.MaxTxnOps {
		return nil, nil, store.NewOpError(backend, "txn", "", store.ErrUnsupported,
			fmt.Errorf("%d operations become %d Consul operations, more than %d", len(ops), len(wire), store.MaxTxnOps))
	}
	return wire, origin, nil
}

// kvOps is the Consul verbs of one op: none for an unconditional check,
// two for a conditional delete, one otherwise.
func (s *Store) kvOps(op store.TxnOp) []*api.KVTxnOp {
	full := s.prefix + op.Key
	// A version no Consul key can have ("", "0", garbage) must fail
	// in order with the others: check-index 0 always fails (a missing
	// key, or a ModifyIndex ≥ 1).
	idx, match := uint64(0), false
	if v, ok := op.Cond.Match(); ok {
		idx, _ = index(v)
		match = true
	}
	switch op.Kind {
	case store.OpCheck:
		switch {
		case op.Cond.IsAbsent():
			return []*api.KVTxnOp{{Verb: api.KVCheckNotExists, Key: full}}
		case match:
			return []*api.KVTxnOp{{Verb: api.KVCheckIndex, Key: full, Index: idx}}
		}
	case store.OpPut:
		switch {
		case op.Cond.IsAbsent():
			return []*api.KVTxnOp{{Verb: api.KVCAS, Key: full, Value: op.Value, Flags: writeNonce(), Index: 0}}
		case match && idx == 0:
			return []*api.KVTxnOp{{Verb: api.KVCheckIndex, Key: full, Index: 0}}
		case match:
			return []*api.KVTxnOp{{Verb: api.KVCAS, Key: full, Value: op.Value, Flags: writeNonce(), Index: idx}}
		default:
			return []*api.KVTxnOp{{Verb: api.KVSet, Key: full, Value: op.Value, Flags: writeNonce()}}
		}
	case store.OpDelete:
		if match {
			return []*api.KVTxnOp{{Verb: api.KVCheckIndex, Key: full, Index: idx}, {Verb: api.KVDelete, Key: full}}
		}
		return []*api.KVTxnOp{{Verb: api.KVDelete, Key: full}}
	}
	return nil
}

// conflictError is the error of a txn that Consul refused at wire op
// f.OpIndex: a *store.TxnError naming the op it came from.
func conflictError(ops []store.TxnOp, origin []int, f *api.TxnError) error {
	i := 0
	if f.OpIndex >= 0 && f.OpIndex < len(origin) {
		i = origin[f.OpIndex]
	}
	return &store.TxnError{Index: i, Key: ops[i].Key, Err: store.NewOpError(backend, "txn", ops[i].Key, store.ErrConflict, errors.New(f.What))}
}

// putVersions reads every put's new version from an applied txn's
// results. Results hold one KV per set, cas and check-index, in op order;
// deletes and check-not-exists have none. Keys are unique per txn, so a
// put's result is the one with its key.
func (s *Store) putVersions(ops []store.TxnOp, results api.TxnResults) ([]store.Version, error) {
	byKey := make(map[string]uint64, len(results))
	for _, r := range results {
		if r != nil && r.KV != nil {
			byKey[r.KV.Key] = r.KV.ModifyIndex
		}
	}
	out := make([]store.Version, len(ops))
	for i, op := range ops {
		if op.Kind != store.OpPut {
			continue
		}
		idx, ok := byKey[s.prefix+op.Key]
		if !ok {
			return nil, store.NewOpError(backend, "txn", op.Key, store.ErrUnknownOutcome, errors.New("txn applied but answered without the written entry"))
		}
		out[i] = version(idx)
	}
	return out, nil
}

// resolveTxn learns, after a Txn whose outcome is unknown, whether it was
// applied, as resolvePut does for a Put: a txn is all or nothing at one
// index, so finding its first put's value with that put's Flags nonce
// proves the whole txn applied, at that entry's ModifyIndex, which is
// then every put's version. A txn without puts cannot be resolved.
func (s *Store) resolveTxn(ctx context.Context, ops []store.TxnOp, wire api.TxnOps) ([]store.Version, bool) {
	for _, w := range wire {
		if k := w.KV; k.Verb == api.KVSet || k.Verb == api.KVCAS {
			v, ok := s.resolvePut(ctx, strings.TrimPrefix(k.Key, s.prefix), k.Value, k.Flags)
			if !ok {
				return nil, false
			}
			out := make([]store.Version, len(ops))
			for i, op := range ops {
				if op.Kind == store.OpPut {
					out[i] = v
				}
			}
			return out, true
		}
	}
	return nil, false
}

// txnShapeError wraps a ValidateTxn error, keeping its *TxnError.
func (s *Store) txnShapeError(err error) error {
	var te *store.TxnError
	if errors.As(err, &te) {
		return err
	}
	return store.NewOpError(backend, "txn", "", store.ErrUnsupported, err)
}

// isACLDenial recognises Consul's ACL errors ("Permission denied…",
// "ACL not found").
func isACLDenial(what string) bool {
	return strings.HasPrefix(what, "Permission denied") || strings.Contains(what, "ACL not found")
}
