package leasetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
)

// The adversary of these subtests is a request that lands late: an
// acquiring write (a Put of the lease record, or a transaction that
// touches it) that its sender gave up on, and that reaches the store
// after other holders have come and gone and the record was deleted by
// hand. Whatever order the requests land in, every token handed to a
// holder must be above every token handed out before at the key.

// variants returns the store as it is and, when it has multi-key
// transactions, the same store with them hidden, so that the creation
// protocol for stores without transactions (S3, GCS, Azure) is checked
// on every backend too. (Subtests cannot be started inside a synctest
// bubble: each variant logs its name before it runs.)
//
// A third variant has no transactions and goes through store/faultstore,
// which reports every other write of the epoch counter as of unknown
// outcome after applying it.
func variants(s store.Store) map[string]store.Store {
	v := map[string]store.Store{"as is": s}
	if txnOf(s) != nil {
		v["without transactions"] = WithoutTxn(s)
	}
	fs := faultstore.New(WithoutTxn(s), 22)
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut, Prefix: lease.EpochKey(""), Fault: faultstore.ApplyThenFail, Prob: 0.5})
	v["through faultstore, without transactions"] = fs
	return v
}

// WithoutTxn hides s's multi-key transactions, so that the lease takes
// the path of stores that have none (S3, GCS, Azure).
func WithoutTxn(s store.Store) store.Store {
	return without{s, func(c *store.Capabilities) { c.Transactions = false }}
}

// txnOf returns s's transactions, or nil.
func txnOf(s store.Store) store.Transactor {
	if tx, ok := s.(store.Transactor); ok && s.Capabilities().Transactions {
		return tx
	}
	return nil
}

// lateStore parks the acquiring writes of key while armed: each reports
// store.ErrUnknownOutcome at once, as a request that timed out on the
// client, and reaches the store only when the test lands it. Writes to
// other keys (the epoch counter, the resource) pass.
type lateStore struct {
	store.Store
	key string

	mu     sync.Mutex
	armed  int
	parked []func() error
}

func (s *lateStore) Capabilities() store.Capabilities {
	c := s.Store.Capabilities()
	c.Transactions = txnOf(s.Store) != nil
	c.Watch = false
	return c
}

func (s *lateStore) park(apply func() error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed == 0 {
		return false
	}
	s.armed--
	s.parked = append(s.parked, apply)
	return true
}

func (s *lateStore) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	if key == s.key && s.park(func() error {
		_, err := s.Store.Put(context.Background(), key, v, cond)
		return err
	}) {
		return "", store.NewOpError("late", "put", key, store.ErrUnknownOutcome, nil)
	}
	return s.Store.Put(ctx, key, v, cond)
}

func (s *lateStore) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	tx := txnOf(s.Store)
	if tx == nil {
		return nil, fmt.Errorf("late: %w", store.ErrUnsupported)
	}
	ops = slices.Clone(ops)
	if slices.ContainsFunc(ops, func(op store.TxnOp) bool { return op.Key == s.key }) && s.park(func() error {
		_, err := tx.Txn(context.Background(), ops)
		return err
	}) {
		return nil, store.NewOpError("late", "txn", s.key, store.ErrUnknownOutcome, nil)
	}
	return tx.Txn(ctx, ops)
}

// land sends parked write i to the store now. Whether the store applies
// it or refuses it (a failed condition) is the store's business.
func (s *lateStore) land(t *testing.T, i int) {
	t.Helper()
	s.mu.Lock()
	apply := s.parked[i]
	s.mu.Unlock()
	if err := apply(); err != nil && !errors.Is(err, store.ErrConflict) {
		t.Fatalf("landing the late write: %v", err)
	}
}

// tokens checks the tokens handed out at one key, in the order they were
// handed out, and writes each to a fenced resource.
type tokens struct {
	e    *env
	s    store.Store
	res  string
	max  uint64
	seen int
}

// held checks a new holding: its token is above every earlier one, and
// the resource accepts a write with it.
func (k *tokens) held(t *testing.T, what string, l *lease.Lease) {
	t.Helper()
	if l.Token() <= k.max {
		t.Errorf("%s: token %d, want more than %d, the highest handed out before", what, l.Token(), k.max)
	}
	k.max = max(k.max, l.Token())
	k.seen++
	if _, err := lease.FencedPut(t.Context(), k.s, k.res, []byte(what), l.Token()); err != nil {
		t.Errorf("%s: FencedPut with the holder's token %d: %v", what, l.Token(), err)
	}
}

// try makes one attempt of lk and, if it holds, checks and releases.
func (k *tokens) try(t *testing.T, what string, lk *lease.Locker) {
	t.Helper()
	l, err := lk.TryAcquire(t.Context())
	switch {
	case err == nil:
		k.held(t, what, l)
		if err := l.Release(t.Context()); err != nil {
			t.Errorf("%s: Release: %v", what, err)
		}
	case errors.Is(err, lease.ErrHeld), errors.Is(err, lease.ErrLostRace):
	default:
		t.Fatalf("%s: TryAcquire: %v", what, err)
	}
}

// drain lets the contenders try in turn until the record is free again,
// waiting out a TTL when a parked record holds it, and checks every
// holding; then one more contender takes it.
func (k *tokens) drain(t *testing.T, lks map[string]*lease.Locker, order ...string) {
	t.Helper()
	for range 2 {
		for _, name := range order {
			k.try(t, name, lks[name])
		}
		k.e.sleep(k.e.ttl + k.e.ttl/10)
	}
	before := k.seen
	k.try(t, "a newcomer", k.e.locker(t, k.s, k.e.opts("newcomer")))
	if k.seen == before {
		t.Errorf("a newcomer after the late writes settled could not take the lease")
	}
}

func deleteRecord(t *testing.T, e *env, s store.Store) {
	t.Helper()
	if err := s.Delete(t.Context(), e.key, store.Unconditional); err != nil {
		t.Fatal(err)
	}
}

// testLateCreateAfterDelete: a's create is sent, then b acquires, writes
// the resource, releases, and the record is deleted by hand; then a's
// create lands. Whatever a (or anyone) holds afterwards has a token above
// b's, so the resource accepts its writes and refuses none of the
// rightful holders'.
func testLateCreateAfterDelete(t *testing.T, e *env) {
	e.inVariants(t, "locks/late-", func(e *env) {
		late := &lateStore{Store: e.s, key: e.key, armed: 1}
		a := e.locker(t, late, e.opts("a"))
		if _, err := a.TryAcquire(t.Context()); !errors.Is(err, lease.ErrLostRace) {
			t.Fatalf("a, with its create in flight: %v, want ErrLostRace", err)
		}
		k := &tokens{e: e, s: e.s, res: "resources/" + e.key}
		k.heldThenDeleted(t)
		late.land(t, 0)
		k.drain(t, map[string]*lease.Locker{"a": a}, "a")
	})
}

// testLateCreatesCrossing: a's and c's creates are both in flight while
// b comes and goes and the record is deleted; they land in the opposite
// order to the one they were sent in.
func testLateCreatesCrossing(t *testing.T, e *env) {
	e.inVariants(t, "locks/crossing-", func(e *env) {
		late := &lateStore{Store: e.s, key: e.key, armed: 2}
		a := e.locker(t, late, e.opts("a"))
		c := e.locker(t, late, e.opts("c"))
		for _, lk := range []*lease.Locker{a, c} {
			if _, err := lk.TryAcquire(t.Context()); !errors.Is(err, lease.ErrLostRace) {
				t.Fatalf("with its create in flight: %v, want ErrLostRace", err)
			}
		}
		k := &tokens{e: e, s: e.s, res: "resources/" + e.key}
		k.heldThenDeleted(t)
		late.land(t, 1)
		late.land(t, 0)
		k.drain(t, map[string]*lease.Locker{"a": a, "c": c}, "c", "a")
	})
}

// inVariants runs fn once on each variant of the store (variants), with
// an env of its own whose key is base followed by the variant's number.
func (e *env) inVariants(t *testing.T, base string, fn func(e *env)) {
	for name, s := range variants(e.s) {
		t.Logf("store %s", name)
		v := *e
		v.s = s
		v.key = base + fmt.Sprint(len(name))
		fn(&v)
	}
}

// heldThenDeleted has b acquire the lease, write the resource and
// release, then deletes the record by hand, as an operator would.
func (k *tokens) heldThenDeleted(t *testing.T) {
	b := mustAcquire(t, k.e.locker(t, k.s, k.e.opts("b")))
	k.held(t, "b", b)
	if err := b.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	deleteRecord(t, k.e, k.s)
}

// testFirstAcquirersRace: contenders that all find the record absent on
// a fresh store race to create it. One wins with the first epoch's first
// token, no epoch is used up by the losers, and nobody is told that a
// record was deleted by hand.
func testFirstAcquirersRace(t *testing.T, e *env) {
	const n = 8
	e.inVariants(t, "locks/first-", func(e *env) {
		s, key := e.s, e.key
		bg := &barrierGets{Store: s, key: key, n: n, all: make(chan struct{})}
		lks := make([]*lease.Locker, n)
		for i := range lks {
			lk, err := lease.NewLocker(withTxnOf(bg, s), key, e.opts(fmt.Sprint("racer-", i)))
			if err != nil {
				t.Fatal(err)
			}
			lks[i] = lk
		}
		leases, errs := tryAcquireAll(t, lks...)
		won := 0
		for i, l := range leases {
			switch {
			case errs[i] == nil:
				won++
				if l.Token() != 1 || l.Recreated() {
					t.Errorf("the winner: token %d, Recreated %v; want token 1 and not recreated", l.Token(), l.Recreated())
				}
			case !errors.Is(errs[i], lease.ErrLostRace):
				t.Errorf("racer %d: %v, want the lease or ErrLostRace", i, errs[i])
			}
		}
		if won != 1 {
			t.Fatalf("%d racers won, want 1", won)
		}
		ent, err := s.Get(t.Context(), lease.EpochKey(key))
		if err != nil {
			t.Fatal(err)
		}
		var counter struct{ Creations uint64 }
		if err := json.Unmarshal(ent.Value, &counter); err != nil || counter.Creations != 1 {
			t.Errorf("epoch counter %s (%v), want 1 creation", ent.Value, err)
		}
	})
}

// withTxnOf gives the wrapper w the transactions of its inner store s,
// when s has them: the wrappers of this suite embed store.Store, which
// hides them.
func withTxnOf(w, s store.Store) store.Store {
	tx := txnOf(s)
	if tx == nil {
		return WithoutTxn(w)
	}
	return txnWrap{w, tx}
}

type txnWrap struct {
	store.Store
	tx store.Transactor
}

func (w txnWrap) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	return w.tx.Txn(ctx, ops)
}

// tryAcquireAll calls TryAcquire on every Locker at once (a Locker may be
// given twice) and returns what each call got.
func tryAcquireAll(t *testing.T, lks ...*lease.Locker) ([]*lease.Lease, []error) {
	var wg sync.WaitGroup
	leases, errs := make([]*lease.Lease, len(lks)), make([]error, len(lks))
	for i, lk := range lks {
		wg.Go(func() { leases[i], errs[i] = lk.TryAcquire(t.Context()) })
	}
	wg.Wait()
	return leases, errs
}
