package etcdstore

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/latchkey/latchkey/store"
)

// Txn implements store.Transactor with one etcd Txn:
//
//	If(   one compare per conditional op: CreateRevision = 0 for IfAbsent,
//	      ModRevision = v for IfMatch(v), ModRevision < 0 (never true) for
//	      an IfMatch of a version no key can have )
//	Then( one put or delete per OpPut and OpDelete )
//	Else( one keys-only get per compared key )
//
// etcd evaluates every compare and runs one branch at one revision, so
// the transaction applies all or nothing and every condition is checked
// against the state before it. When it does not apply, the Else gets
// return the compared keys as they were at that same revision, and the
// first failing op is found by checking each op's condition against them
// (store.Condition.Holds): no second read, so no race with later writes.
// Every put of a successful Txn gets the Txn's revision as its version.
//
// Limits: at most store.MaxTxnOps ops (etcd's default --max-txn-ops is the
// same 128), and the keys and values together at most
// Options.MaxValueSize bytes.
func (s *Store) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	if err := store.ValidateTxn(ops); err != nil {
		var te *store.TxnError
		if errors.As(err, &te) {
			return nil, err
		}
		return nil, store.NewOpError(backend, "txn", "", store.ErrUnsupported, err)
	}
	if err := store.Guard(ctx, s.closed.Load(), backend, "txn", ops[0].Key); err != nil {
		return nil, err
	}
	var (
		cmps    []clientv3.Cmp
		then    []clientv3.Op
		els     []clientv3.Op
		checked []int // Else get i reads the key of ops[checked[i]]
		size    int
	)
	for i, op := range ops {
		full := s.prefix + op.Key
		size += len(full) + len(op.Value)
		if !op.Cond.IsUnconditional() {
			cmp, ok := compareFor(full, op.Cond)
			if !ok {
				cmp = clientv3.Compare(clientv3.ModRevision(full), "<", 0)
			}
			cmps = append(cmps, cmp)
			els = append(els, clientv3.OpGet(full, clientv3.WithKeysOnly()))
			checked = append(checked, i)
		}
		switch op.Kind {
		case store.OpPut:
			then = append(then, clientv3.OpPut(full, string(op.Value)))
		case store.OpDelete:
			then = append(then, clientv3.OpDelete(full))
		}
	}
	out := make([]store.Version, len(ops))
	if len(cmps) == 0 && len(then) == 0 { // only unconditional checks
		return out, nil
	}
	if size > s.opts.MaxValueSize {
		return nil, store.NewOpError(backend, "txn", "", store.ErrUnsupported, fmt.Errorf("keys and values: %w", s.tooLarge(size)))
	}
	var resp *clientv3.TxnResponse
	actx, err := s.call(ctx, true, func(actx context.Context) (err error) {
		resp, err = s.c.Txn(actx).If(cmps...).Then(then...).Else(els...).Commit()
		return err
	})
	if err != nil {
		return nil, s.opError(ctx, actx, "txn", "", true, err)
	}
	if !resp.Succeeded {
		return nil, firstFailure(ops, checked, resp)
	}
	for i, op := range ops {
		if op.Kind == store.OpPut {
			out[i] = version(resp.Header.Revision)
		}
	}
	return out, nil
}

// firstFailure names the first op of a failed Txn whose condition does
// not hold on the keys as the Else branch read them.
func firstFailure(ops []store.TxnOp, checked []int, resp *clientv3.TxnResponse) error {
	for j, i := range checked {
		if j >= len(resp.Responses) {
			break
		}
		r := resp.Responses[j].GetResponseRange()
		if r == nil {
			break
		}
		exists, cur := len(r.Kvs) > 0, store.Version("")
		if exists {
			cur = version(r.Kvs[0].ModRevision)
		}
		if !ops[i].Cond.Holds(exists, cur) {
			return &store.TxnError{Index: i, Key: ops[i].Key, Err: store.NewOpError(backend, "txn", ops[i].Key, store.ErrConflict,
				fmt.Errorf("%s: %s", ops[i].Cond, currentState(resp, j)))}
		}
	}
	// Unreachable while etcd answers as documented: some compare failed.
	i := 0
	if len(checked) > 0 {
		i = checked[0]
	}
	return &store.TxnError{Index: i, Key: ops[i].Key, Err: store.NewOpError(backend, "txn", ops[i].Key, store.ErrConflict,
		errors.New("etcd reported a failed compare that its Else reads do not show"))}
}
