package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// The model subtest drives a store with a random sequence of operations
// and checks every result against a tiny reference model: a map from key
// to (value, version), plus every version each key has ever had.

var modelTests = []subtest{
	{name: "random operation sequences match a reference model", run: testModel},
}

var modelKeys = []string{"m/a", "m/b", "m/c/d", "m/c/e", "n"}
var modelPrefixes = []string{"", "m", "m/", "m/c", "m/c/", "n", "x"}

type refModel struct {
	cur  map[string]store.Entry            // existing keys
	seen map[string]map[store.Version]bool // every version each key had
	all  []store.Version                   // every version, for stale picks
	// reuse allows a version the key had before (a store without
	// UniqueVersions versions contents, not writes).
	reuse bool
}

func newRefModel() *refModel {
	return &refModel{cur: map[string]store.Entry{}, seen: map[string]map[store.Version]bool{}}
}

func (m *refModel) holds(key string, c store.Condition) bool {
	e, ok := m.cur[key]
	return c.Holds(ok, e.Version)
}

// wrote records a successful write of key; it reports a reused version.
func (m *refModel) wrote(key string, value []byte, v store.Version) error {
	if v == "" {
		return fmt.Errorf("returned the empty version")
	}
	if m.seen[key][v] && !m.reuse {
		return fmt.Errorf("returned version %q, which %q already had", v, key)
	}
	if m.seen[key] == nil {
		m.seen[key] = map[store.Version]bool{}
	}
	m.seen[key][v] = true
	m.all = append(m.all, v)
	m.cur[key] = store.Entry{Key: key, Value: bytes.Clone(value), Version: v}
	return nil
}

type modelRun struct {
	t    *testing.T
	ctx  context.Context
	s    store.Store
	caps store.Capabilities
	tx   store.Transactor // nil without transactions
	rng  *rand.Rand
	m    *refModel
	seed int64
	step int
}

func testModel(t *testing.T, h Harness) {
	base := seed()
	for seq := range 2 {
		sd := base + int64(seq)
		t.Logf("model sequence %d: seed %d (rerun with -storetest.seed=%d or LATCHKEY_STORETEST_SEED=%d)", seq, sd, base, base)
		ctx, s := h.open(t)
		r := &modelRun{t: t, ctx: ctx, s: s, caps: s.Capabilities(), m: newRefModel(), seed: sd,
			rng: rand.New(rand.NewPCG(uint64(sd), 0))}
		r.m.reuse = !r.caps.UniqueVersions
		if hasTxn(s) {
			r.tx = s.(store.Transactor)
		}
		n := h.scaled(400, 60)
		for r.step = 0; r.step < n; r.step++ {
			r.one()
			if t.Failed() {
				return
			}
		}
		r.checkList("", 0)
	}
}

func (r *modelRun) failf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d, op %d: %s", r.seed, r.step, fmt.Sprintf(format, args...))
}

func (r *modelRun) key() string { return modelKeys[r.rng.IntN(len(modelKeys))] }

func (r *modelRun) value() []byte {
	b := make([]byte, r.rng.IntN(24))
	for i := range b {
		b[i] = byte(r.rng.UintN(256))
	}
	return b
}

// cond picks a condition the backend supports: mostly the current
// version, sometimes a stale or empty one.
func (r *modelRun) cond(key string, forDelete bool) store.Condition {
	var choices []func() store.Condition
	choices = append(choices, func() store.Condition { return store.Unconditional })
	if r.caps.CreateIfAbsent && !forDelete {
		choices = append(choices, func() store.Condition { return store.IfAbsent })
	}
	if (r.caps.CompareAndSwap && !forDelete) || (r.caps.CompareAndDelete && forDelete) {
		match := func() store.Condition {
			switch x := r.rng.IntN(10); {
			case x < 6:
				return store.IfMatch(r.m.cur[key].Version) // "" when absent
			case x < 9 && len(r.m.all) > 0:
				return store.IfMatch(r.m.all[r.rng.IntN(len(r.m.all))])
			default:
				return store.IfMatch("")
			}
		}
		choices = append(choices, match, match)
	}
	return choices[r.rng.IntN(len(choices))]()
}

func (r *modelRun) one() {
	r.t.Helper()
	switch x := r.rng.IntN(20); {
	case x < 5:
		r.get(r.key())
	case x < 12:
		key := r.key()
		r.put(key, r.value(), r.cond(key, false))
	case x < 16:
		key := r.key()
		r.delete(key, r.cond(key, true))
	case x < 18:
		r.checkList(modelPrefixes[r.rng.IntN(len(modelPrefixes))], r.rng.IntN(4))
	default:
		if r.tx != nil {
			r.txn()
		} else {
			r.get(r.key())
		}
	}
}

func (r *modelRun) get(key string) {
	r.t.Helper()
	e, err := r.s.Get(r.ctx, key)
	want, ok := r.m.cur[key]
	switch {
	case !ok && !errors.Is(err, store.ErrNotFound):
		r.failf("Get(%q) = %q@%q, %v; the model says ErrNotFound", key, e.Value, e.Version, err)
	case ok && err != nil:
		r.failf("Get(%q): %v; the model has %q@%q", key, err, want.Value, want.Version)
	case ok && (!bytes.Equal(e.Value, want.Value) || e.Version != want.Version):
		r.failf("Get(%q) = %q@%q; the model has %q@%q", key, e.Value, e.Version, want.Value, want.Version)
	}
}

func (r *modelRun) put(key string, value []byte, c store.Condition) {
	r.t.Helper()
	v, err := r.s.Put(r.ctx, key, value, c)
	if !r.m.holds(key, c) {
		if !errors.Is(err, store.ErrConflict) {
			r.failf("Put(%q, %s) = %q, %v; the model says ErrConflict", key, c, v, err)
		}
		return
	}
	if err != nil {
		r.failf("Put(%q, %s): %v; the model says it succeeds", key, c, err)
	}
	if werr := r.m.wrote(key, value, v); werr != nil {
		r.failf("Put(%q, %s) %v", key, c, werr)
	}
}

func (r *modelRun) delete(key string, c store.Condition) {
	r.t.Helper()
	err := r.s.Delete(r.ctx, key, c)
	if !r.m.holds(key, c) {
		if !errors.Is(err, store.ErrConflict) {
			r.failf("Delete(%q, %s): %v; the model says ErrConflict", key, c, err)
		}
		return
	}
	if err != nil {
		r.failf("Delete(%q, %s): %v; the model says it succeeds", key, c, err)
	}
	delete(r.m.cur, key)
}

func (r *modelRun) checkList(prefix string, limit int) {
	r.t.Helper()
	var got []store.Item
	opts := &store.ListOptions{Limit: limit}
	for range len(modelKeys) + 2 {
		page, err := r.s.List(r.ctx, prefix, opts)
		if err != nil {
			r.failf("List(%q, %+v): %v", prefix, *opts, err)
		}
		got = append(got, page.Items...)
		if page.Next == "" {
			break
		}
		opts = &store.ListOptions{After: page.Next, Limit: limit}
	}
	var want []store.Item
	for k, e := range r.m.cur {
		if strings.HasPrefix(k, prefix) {
			want = append(want, store.Item{Key: k, Version: e.Version})
		}
	}
	slices.SortFunc(want, func(a, b store.Item) int { return strings.Compare(a.Key, b.Key) })
	if !slices.Equal(got, want) {
		r.failf("List(%q, limit %d) = %v; the model has %v", prefix, limit, got, want)
	}
}

// txn runs a random transaction of one to three ops on distinct keys.
func (r *modelRun) txn() {
	r.t.Helper()
	keys := slices.Clone(modelKeys)
	r.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	ops := make([]store.TxnOp, 1+r.rng.IntN(3))
	for i := range ops {
		k := keys[i]
		switch r.rng.IntN(3) {
		case 0:
			ops[i] = store.Check(k, r.txnCond(k))
		case 1:
			ops[i] = store.PutOp(k, r.value(), r.txnCond(k))
		default:
			c := r.txnCond(k)
			if c.IsAbsent() {
				c = store.Unconditional
			}
			ops[i] = store.DeleteOp(k, c)
		}
	}
	vs, err := r.tx.Txn(r.ctx, ops)
	failing := -1
	for i, op := range ops {
		if !r.m.holds(op.Key, op.Cond) {
			failing = i
			break
		}
	}
	if failing >= 0 {
		var te *store.TxnError
		if !errors.Is(err, store.ErrConflict) || !errors.As(err, &te) || te.Index != failing {
			r.failf("Txn(%s) = %v; the model says ErrConflict in a *TxnError at op %d", describeOps(ops), err, failing)
		}
		return
	}
	if err != nil || len(vs) != len(ops) {
		r.failf("Txn(%s) = %q, %v; the model says it succeeds with %d versions", describeOps(ops), vs, err, len(ops))
	}
	for i, op := range ops {
		switch op.Kind {
		case store.OpPut:
			if werr := r.m.wrote(op.Key, op.Value, vs[i]); werr != nil {
				r.failf("Txn(%s) op %d %v", describeOps(ops), i, werr)
			}
		case store.OpDelete:
			delete(r.m.cur, op.Key)
		}
		if op.Kind != store.OpPut && vs[i] != "" {
			r.failf("Txn(%s) op %d (%s) returned version %q, want the zero Version", describeOps(ops), i, op.Kind, vs[i])
		}
	}
}

// txnCond is cond with a bias toward conditions that hold, so that
// transactions of several ops succeed often enough.
func (r *modelRun) txnCond(key string) store.Condition {
	if r.rng.IntN(3) > 0 {
		e, ok := r.m.cur[key]
		switch {
		case !ok && r.caps.CreateIfAbsent:
			return store.IfAbsent
		case ok && r.caps.CompareAndSwap:
			return store.IfMatch(e.Version)
		}
	}
	return r.cond(key, false)
}

func describeOps(ops []store.TxnOp) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %q %s", op.Kind, op.Key, op.Cond)
	}
	return strings.Join(parts, "; ")
}
