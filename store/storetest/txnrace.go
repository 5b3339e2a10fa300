package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// Transactions are atomic against everything else, not only against other
// transactions: a Txn racing single-key writes on one version is one more
// writer of whom exactly one wins, and no reader sees part of a Txn.

func hasTxnCAS(s store.Store) bool { return hasTxn(s) && hasCAS(s) }

// txnRaceResult is one racer's outcome: its error, and its put's version.
type txnRaceResult struct {
	v   store.Version
	err error
}

// testTxnAgainstSingleKeyWrites races, on one version of one key,
// transactions (a put or a delete of the key, each with a put of a side
// key of its own) against PutIfMatch and, where declared, DeleteIfMatch.
// Exactly one may win; the key then shows the winner's effect, and only a
// winning transaction's side key exists.
func testTxnAgainstSingleKeyWrites(t *testing.T, h Harness) {
	ctx, s, tx := openTxn(t, h)
	cad := s.Capabilities().CompareAndDelete
	const n = 12
	for round := range h.scaled(4, 2) {
		key := fmt.Sprintf("txnrace/%d/key", round)
		side := func(i int) string { return fmt.Sprintf("txnrace/%d/side/%02d", round, i) }
		v0 := put(t, ctx, s, key, []byte("start"), store.Unconditional)
		value := func(i int) []byte { return fmt.Appendf(nil, "racer %d", i) }
		kind := func(i int) string {
			switch k := i % 4; {
			case k == 0:
				return "txn put"
			case k == 1:
				return "txn delete"
			case k == 3 && cad:
				return "delete"
			}
			return "put"
		}
		res := race(n, func(i int) txnRaceResult {
			cond := store.IfMatch(v0)
			switch kind(i) {
			case "txn put":
				vs, err := tx.Txn(ctx, []store.TxnOp{store.PutOp(key, value(i), cond), store.PutOp(side(i), value(i), store.Unconditional)})
				if err != nil {
					return txnRaceResult{err: err}
				}
				return txnRaceResult{v: vs[0]}
			case "txn delete":
				_, err := tx.Txn(ctx, []store.TxnOp{store.PutOp(side(i), value(i), store.Unconditional), store.DeleteOp(key, cond)})
				return txnRaceResult{err: err}
			}
			// Single-key writes are quicker than transactions almost
			// everywhere; let the transactions start first, so that the
			// single-key writes land while a transaction is under way.
			runtime.Gosched()
			if kind(i) == "delete" {
				return txnRaceResult{err: s.Delete(ctx, key, cond)}
			}
			v, err := s.Put(ctx, key, value(i), cond)
			return txnRaceResult{v: v, err: err}
		})
		errs := make([]error, n)
		for i, r := range res {
			errs[i] = r.err
		}
		w := oneWinner(t, fmt.Sprintf("round %d (%d racers: transactions, PutIfMatch, DeleteIfMatch)", round, n), errs)
		if w < 0 {
			continue
		}
		switch kind(w) {
		case "txn put", "put":
			wantEntry(t, ctx, s, key, value(w), res[w].v)
		default:
			wantMissing(t, ctx, s, key)
		}
		var sides []string
		for it, err := range store.All(ctx, s, fmt.Sprintf("txnrace/%d/side/", round)) {
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			sides = append(sides, it.Key)
		}
		var want []string
		if kind(w) == "txn put" || kind(w) == "txn delete" {
			want = []string{side(w)}
		}
		if !slices.Equal(sides, want) {
			t.Errorf("round %d: winner %d (%s); side keys %q exist, want %q", round, w, kind(w), sides, want)
		}
	}
}

// snapKeys are the keys every transaction of testTxnSeenWhole writes.
var snapKeys = []string{"snap/a", "snap/b/c", "snap/d"}

// testTxnSeenWhole has one writer move every key of snapKeys to the next
// generation with one transaction at a time, while readers Get the keys
// one by one in random order. Once any key shows generation g, that
// transaction has committed, so every later read of any key must show g
// or newer: a read of an older generation sees a transaction partly
// applied. The writer and the readers keep pace (a few passes of reads per
// generation), so that reads overlap transactions on fast and slow
// backends alike without spinning on either.
func testTxnSeenWhole(t *testing.T, h Harness) {
	ctx, s, tx := openTxn(t, h)
	gens := h.scaled(20, 8)
	writeGen := func(g int) error {
		ops := make([]store.TxnOp, len(snapKeys))
		for i, k := range snapKeys {
			ops[i] = store.PutOp(k, strconv.AppendInt(nil, int64(g), 10), store.Unconditional)
		}
		_, err := tx.Txn(ctx, ops)
		return err
	}
	if err := writeGen(0); err != nil {
		t.Fatalf("Txn of generation 0: %v", err)
	}
	const readers, passesPerGen = 2, 4
	p := &pacer{readers: readers}
	p.cond.L = &p.mu
	var reads atomic.Int64
	errs := race(readers+1, func(r int) error {
		if r == readers {
			defer p.finish()
			for g := 1; g <= gens; g++ {
				if err := writeGen(g); err != nil {
					return fmt.Errorf("Txn of generation %d: %w", g, err)
				}
				p.wrote(g)
			}
			return nil
		}
		defer p.leave()
		rng := rand.New(rand.NewPCG(uint64(r), 3))
		for gen := 0; gen >= 0; gen = p.next(gen) {
			for range passesPerGen {
				if err := readPass(ctx, s, rng, &reads); err != nil {
					return fmt.Errorf("reader %d: %w", r, err)
				}
				p.passed()
			}
		}
		return nil
	})
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d reads during %d transactions", reads.Load(), gens)
}

// pacer keeps testTxnSeenWhole's writer and readers in step without
// spinning: the writer starts a generation once every reader made a pass
// on average per generation so far, and a reader that made its passes
// waits for the next generation.
type pacer struct {
	mu      sync.Mutex
	cond    sync.Cond
	readers int // readers still reading
	gen     int // last generation written
	passes  int
	done    bool
}

func (p *pacer) wrote(g int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen = g
	p.cond.Broadcast()
	for p.passes < g*p.readers && p.readers > 0 {
		p.cond.Wait()
	}
}

func (p *pacer) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	p.cond.Broadcast()
}

func (p *pacer) passed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.passes++
	p.cond.Broadcast()
}

func (p *pacer) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.readers--
	p.cond.Broadcast()
}

// next waits for a generation after gen and returns it, or -1 once the
// writer is done.
func (p *pacer) next(gen int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.gen == gen && !p.done {
		p.cond.Wait()
	}
	if p.done {
		return -1
	}
	return p.gen
}

// readPass reads every key of snapKeys once, in random order, and fails
// when a key shows an older generation than a key read before it.
func readPass(ctx context.Context, s store.Store, rng *rand.Rand, reads *atomic.Int64) error {
	high, highKey := -1, ""
	for _, i := range rng.Perm(len(snapKeys)) {
		e, err := s.Get(ctx, snapKeys[i])
		if err != nil {
			return fmt.Errorf("Get(%q): %w", snapKeys[i], err)
		}
		g, err := strconv.Atoi(string(e.Value))
		if err != nil {
			return fmt.Errorf("%q holds %q", snapKeys[i], e.Value)
		}
		reads.Add(1)
		if g < high {
			return fmt.Errorf("%q showed generation %d after %q showed %d: a transaction was seen partly applied", snapKeys[i], g, highKey, high)
		}
		high, highKey = g, snapKeys[i]
	}
	return nil
}

// testTxnIsolatedWhileApplied checks, deterministically where the race
// above relies on the scheduler, that a Txn is applied at one instant for
// single-key writers too. A Txn writes two keys (a side key it creates,
// and a put or delete of a key on its version v0), in either op order.
// One watcher polls the side key and, the moment it sees it, writes the
// key on v0 (PutIfMatch, or DeleteIfMatch where declared); another polls
// the key and, the moment it sees it changed, creates the side key
// (PutIfAbsent). On a store that applies the Txn at once, a visible write
// of it means it committed, so both watchers lose. A store that applies a
// Txn's writes one after another lets in the watcher of whichever key it
// wrote first, whenever its writes are far enough apart for one poll and
// one write: a Txn that pauses between its writes is caught every time.
func testTxnIsolatedWhileApplied(t *testing.T, h Harness) {
	ctx, s, tx := openTxn(t, h)
	cad := s.Capabilities().CompareAndDelete
	for round := range 4 {
		key := fmt.Sprintf("txniso/%d/key", round)
		side := fmt.Sprintf("txniso/%d/side", round)
		v0 := put(t, ctx, s, key, []byte("start"), store.Unconditional)
		txnDeletes, keyFirst := round%2 == 1, round/2 == 1
		op := store.PutOp(key, []byte("txn"), store.IfMatch(v0))
		if txnDeletes {
			op = store.DeleteOp(key, store.IfMatch(v0))
		}
		ops := []store.TxnOp{store.PutOp(side, []byte("txn"), store.IfAbsent), op}
		if keyFirst {
			ops[0], ops[1] = ops[1], ops[0]
		}
		done := make(chan struct{})
		var vs []store.Version
		var terr error
		errs := race(3, func(i int) error {
			switch i {
			case 0:
				defer close(done)
				vs, terr = tx.Txn(ctx, ops)
				return nil
			case 1: // sees the side key, writes the key on v0
				if err := watchUntil(ctx, s, side, done, func(_ store.Entry, err error) bool { return err == nil }); err != nil {
					return err
				}
				if cad && round%2 == 0 {
					return wantLost("DeleteIfMatch of "+key+" on the version the Txn replaced, once its side key was visible",
						s.Delete(ctx, key, store.IfMatch(v0)))
				}
				_, err := s.Put(ctx, key, []byte("single"), store.IfMatch(v0))
				return wantLost("PutIfMatch of "+key+" on the version the Txn replaced, once its side key was visible", err)
			default: // sees the key changed, creates the side key
				if err := watchUntil(ctx, s, key, done, func(e store.Entry, err error) bool { return err != nil || e.Version != v0 }); err != nil {
					return err
				}
				_, err := s.Put(ctx, side, []byte("single"), store.IfAbsent)
				return wantLost("PutIfAbsent of "+side+" once the Txn's write of "+key+" was visible", err)
			}
		})
		what := fmt.Sprintf("round %d (Txn %s, %s first)", round, map[bool]string{false: "puts", true: "deletes"}[txnDeletes],
			map[bool]string{false: "side key", true: "key"}[keyFirst])
		for _, err := range errs {
			if err != nil {
				t.Errorf("%s: %v: the Txn was not applied at one instant", what, err)
			}
		}
		if terr != nil {
			t.Errorf("%s: Txn: %v; want it applied (no write could come before it committed)", what, terr)
			continue
		}
		wantEntry(t, ctx, s, side, []byte("txn"), vs[slices.IndexFunc(ops, func(o store.TxnOp) bool { return o.Key == side })])
		if txnDeletes {
			wantMissing(t, ctx, s, key)
		} else {
			wantEntry(t, ctx, s, key, []byte("txn"), vs[slices.IndexFunc(ops, func(o store.TxnOp) bool { return o.Key == key })])
		}
	}
}

// watchUntil polls key until seen says its state is the one awaited, and
// after done once more: it returns nil when seen said so, and an error
// when the state never came (the Txn ended without it) or a read failed.
func watchUntil(ctx context.Context, s store.Store, key string, done <-chan struct{}, seen func(store.Entry, error) bool) error {
	for {
		finished := false
		select {
		case <-done:
			finished = true
		default:
		}
		e, err := s.Get(ctx, key)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("Get(%q): %w", key, err)
		}
		if seen(e, err) {
			return nil
		}
		if finished {
			return fmt.Errorf("Get(%q) after the Txn returned: never showed its write", key)
		}
		runtime.Gosched()
	}
}

// wantLost returns nil when err is ErrConflict, and an error naming what
// otherwise.
func wantLost(what string, err error) error {
	switch {
	case err == nil:
		return fmt.Errorf("%s succeeded", what)
	case !errors.Is(err, store.ErrConflict):
		return fmt.Errorf("%s: err = %v, want ErrConflict", what, err)
	}
	return nil
}
