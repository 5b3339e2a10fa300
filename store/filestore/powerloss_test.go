package filestore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/powerfs"
	"github.com/latchkey/latchkey/store"
)

// Power-loss rounds (issue 23 items 7 and 8): a scripted workload runs on
// powerfs, which keeps only what was fsynced; the power is cut after the
// k-th sync call, for every k, and at random moments; the image is
// restarted and every write acknowledged before the cut must be there
// with its value (or the value of the write in flight at the cut), and
// the store must open. LATCHKEY_POWERLOSS_ROUNDS=N runs N random-moment
// rounds per model and start (default 2; CI runs the default) and every
// crash point under both models.

// plOp is one step of the workload: run it, and if it succeeds, effect is
// what it wrote (nil: the key is deleted).
type plOp struct {
	name   string
	run    func(ctx context.Context, s *Store) error
	effect map[string]*string
}

func sp(s string) *string { return &s }

// plWorkload is every kind of write the store has: a create, a first key
// of a new bucket, a journaled transaction with a delete, a CAS update (as
// kv update does), a delete, a second transaction, and a streamed value.
func plWorkload(tag string) []plOp {
	put := func(key, val string, cond func(ctx context.Context, s *Store) (store.Condition, error)) func(ctx context.Context, s *Store) error {
		return func(ctx context.Context, s *Store) error {
			c, err := cond(ctx, s)
			if err != nil {
				return err
			}
			_, err = s.Put(ctx, key, []byte(val), c)
			return err
		}
	}
	uncond := func(context.Context, *Store) (store.Condition, error) { return store.Unconditional, nil }
	absent := func(context.Context, *Store) (store.Condition, error) { return store.IfAbsent, nil }
	current := func(key string) func(context.Context, *Store) (store.Condition, error) {
		return func(ctx context.Context, s *Store) (store.Condition, error) {
			e, err := s.Get(ctx, key)
			if errors.Is(err, store.ErrNotFound) {
				return store.IfAbsent, nil
			}
			return store.IfMatch(e.Version), err
		}
	}
	txn := func(ops ...store.TxnOp) func(ctx context.Context, s *Store) error {
		return func(ctx context.Context, s *Store) error { _, err := s.Txn(ctx, ops); return err }
	}
	big := bytes.Repeat([]byte(tag), 64<<10/len(tag))
	return []plOp{
		{"put a if absent", put("a", "a1"+tag, absent), map[string]*string{"a": sp("a1" + tag)}},
		{"put dir/b", put("dir/b", "b1"+tag, uncond), map[string]*string{"dir/b": sp("b1" + tag)}},
		{"txn a, x/c, delete dir/b", txn(
			store.PutOp("a", []byte("a2"+tag), store.Unconditional),
			store.PutOp("x/c", []byte("c1"+tag), store.Unconditional),
			store.DeleteOp("dir/b", store.Unconditional)),
			map[string]*string{"a": sp("a2" + tag), "x/c": sp("c1" + tag), "dir/b": nil}},
		{"update a", put("a", "a3"+tag, current("a")), map[string]*string{"a": sp("a3" + tag)}},
		{"delete x/c", func(ctx context.Context, s *Store) error { return s.Delete(ctx, "x/c", store.Unconditional) },
			map[string]*string{"x/c": nil}},
		{"txn y/d, a", txn(
			store.PutOp("y/d", []byte("d1"+tag), store.Unconditional),
			store.PutOp("a", []byte("a4"+tag), store.Unconditional)),
			map[string]*string{"y/d": sp("d1" + tag), "a": sp("a4" + tag)}},
		{"stream big", func(ctx context.Context, s *Store) error {
			_, err := s.PutStream(ctx, "big", bytes.NewReader(big), store.Unconditional)
			return err
		}, map[string]*string{"big": sp(string(big))}},
	}
}

// plStorePath is where the workload's store lives under the mount: its
// parents are created by Open, as the CLI's default store's are.
func plStorePath(root string) string { return filepath.Join(root, "home", "state", "store") }

// plCounts are the figures of a run of rounds.
type plCounts struct{ rounds, cuts, acks, lost int }

// plRound runs ops on a powerfs over src until the cut (cutAfter syncs,
// or at a random moment within cutAt when cutAt > 0), restarts on the
// image and checks it against state (what was acknowledged before the
// round). It returns the image's directory, the state it must hold, and
// the number of syncs the round made.
func plRound(t *testing.T, src string, model powerfs.Model, cutAfter int, cutAt time.Duration, ops []plOp,
	state map[string]*string, c *plCounts) (string, map[string]*string, int) {
	t.Helper()
	ctx := context.Background()
	p := powerfs.Mount(t, src, powerfs.Options{Model: model, CutAfter: cutAfter})
	if cutAt > 0 {
		timer := time.AfterFunc(rand.N(cutAt), func() { p.Cut() })
		defer timer.Stop()
	}
	next := make(map[string]*string, len(state))
	for k, v := range state {
		next[k] = v
	}
	inflight := map[string]*string{}
	s, err := Open(plStorePath(p.Dir()), &Options{Stripes: 4})
	if err != nil {
		t.Fatalf("open on powerfs: %v", err)
	}
	acks := 0
	for _, op := range ops {
		err := op.run(ctx, s)
		if p.IsCut() {
			inflight = op.effect // may or may not have happened
			break
		}
		switch {
		case err == nil:
			acks++
			for k, v := range op.effect {
				next[k] = v
			}
		case errors.Is(err, store.ErrConflict):
		default:
			t.Fatalf("%s before the cut: %v", op.name, err)
		}
	}
	s.Close()
	syncs := p.Syncs()
	p.Cut()
	p.Unmount()
	out := p.Image(t)
	c.rounds++
	c.acks += acks
	lost := plCheck(t, out, next, inflight)
	c.lost += lost
	if lost > 0 {
		t.Errorf("%s, cut after sync %d of this round: %d acknowledged writes lost", model, cutAfter, lost)
	}
	// What the image holds is the next round's acknowledged state.
	for k, v := range inflight {
		if got := plRead(t, out, k); (got == nil) == (v == nil) && (got == nil || *got == *v) {
			next[k] = v
		}
	}
	return out, next, syncs
}

// plRead reads key from the store in dir (nil: absent).
func plRead(t *testing.T, dir, key string) *string {
	t.Helper()
	s, err := Open(plStorePath(dir), &Options{Stripes: 4})
	if err != nil {
		t.Fatalf("the store does not open after the cut: %v", err)
	}
	defer s.Close()
	e, err := s.Get(context.Background(), key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("get %q after the cut: %v", key, err)
	}
	v := string(e.Value)
	return &v
}

// plCheck opens the store in dir and counts the keys that hold neither
// their acknowledged value nor the value of the write in flight.
func plCheck(t *testing.T, dir string, acked, inflight map[string]*string) int {
	t.Helper()
	s, err := Open(plStorePath(dir), &Options{Stripes: 4})
	if err != nil {
		t.Fatalf("the store does not open after the cut: %v", err)
	}
	defer s.Close()
	keys := map[string]bool{}
	for k := range acked {
		keys[k] = true
	}
	for k := range inflight {
		keys[k] = true
	}
	lost := 0
	for k := range keys {
		e, err := s.Get(context.Background(), k)
		var got *string
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			t.Errorf("get %q after the cut: %v", k, err)
			lost++
			continue
		default:
			v := string(e.Value)
			got = &v
		}
		if !powerfs.Survived(got, k, acked, inflight) {
			lost++
			t.Errorf("%q after the cut: %s, acknowledged %s", k, powerfs.Show(got), powerfs.Show(acked[k]))
		}
	}
	return lost
}

// plExtraRounds is the number of random-moment rounds per model and start:
// LATCHKEY_POWERLOSS_ROUNDS, 2 by default.
func plExtraRounds() int {
	if n, err := strconv.Atoi(os.Getenv("LATCHKEY_POWERLOSS_ROUNDS")); err == nil && n >= 0 {
		return n
	}
	return 2
}

// plStride is the step between crash points: 1 (every sync) under the
// strict model; the journaling model, which loses less, is cut at every
// third sync unless LATCHKEY_POWERLOSS_ROUNDS asks for a long run.
func plStride(model powerfs.Model) int {
	if model == powerfs.Strict || os.Getenv("LATCHKEY_POWERLOSS_ROUNDS") != "" {
		return 1
	}
	return 3
}

// TestPowerLoss cuts the power after every sync call of the workload, on a
// fresh directory (whose parents do not exist yet) and on one that holds
// the workload's earlier state, under the strict and the journaling model,
// then at random moments.
func TestPowerLoss(t *testing.T) {
	for _, model := range []powerfs.Model{powerfs.Strict, powerfs.Journaling} {
		t.Run(model.String(), func(t *testing.T) {
			var c plCounts
			// A full run without a cut: how many syncs there are, and
			// the populated start.
			populated, pstate, total := plRound(t, "", model, 0, 0, plWorkload("-p"), nil, &c)
			for _, start := range []struct {
				name  string
				src   string
				state map[string]*string
			}{{"fresh", "", nil}, {"populated", populated, pstate}} {
				for k := 1; k <= total; k += plStride(model) {
					plRound(t, start.src, model, k, 0, plWorkload("-r"), start.state, &c)
					c.cuts++
				}
				for range plExtraRounds() {
					plRound(t, start.src, model, 0, 50*time.Millisecond, plWorkload("-x"), start.state, &c)
					c.cuts++
				}
			}
			// Recovery itself: cut while the store opens on the image of
			// a cut in the middle of a transaction.
			mid, mstate, _ := plRound(t, "", model, total/2, 0, plWorkload("-m"), nil, &c)
			for k := 1; k <= 8; k++ {
				plRound(t, mid, model, k, 0, nil, mstate, &c)
				c.cuts++
			}
			t.Logf("%s: %d rounds, %d crash points (%d syncs in the workload), %d acknowledged writes checked, %d lost",
				model, c.rounds, c.cuts, total, c.acks, c.lost)
		})
	}
}
