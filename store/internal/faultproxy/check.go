package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
)

// Faults arms a fault for the next request that changes state.
type Faults interface {
	// Arm makes the next write request get a (Drop or Late).
	Arm(a Action)
	// Land delivers every held request and returns once they are at the
	// server.
	Land()
	// Clear disarms a fault no request has reached.
	Clear()
}

// Arm implements Faults: the next request that is not a GET or HEAD.
func (p *HTTP) Arm(a Action) { p.Add(Rule{Match: WriteRequest, Action: a, Times: 1}) }

// Arm implements Faults at the byte level: Drop cuts the connection on
// the next answer bytes, Late holds every byte sent until Land.
func (p *TCP) Arm(a Action) {
	switch a {
	case Drop:
		p.DropNext()
	case Late:
		p.Hold()
	}
}

// Clear implements Faults.
func (p *TCP) Clear() { p.Land() }

// Writes is what CheckWrites runs.
type Writes struct {
	// Via is the store under test, reaching its server through Faults.
	Via store.Store
	// Direct reaches the same keys without faults, to see what happened.
	Direct store.Store
	Faults Faults
	// OpTimeout bounds each faulty operation (its context); a Late
	// request is held past it. Default 10s. A backend with its own
	// per-request timeout (shorter) resolves within it; one without has
	// its caller's context end mid-request.
	OpTimeout time.Duration
	// Settle is waited after Land when the proxy cannot tell that the
	// server has answered the held request (TCP). Default 0.
	Settle time.Duration
}

// CheckWrites runs every write the store declares (Put unconditional,
// IfAbsent, IfMatch; Delete unconditional, IfMatch) once with its answer
// dropped after the server applied it, and once delivered late, after
// its caller gave up, with another writer's Put in between. Each must end
// as a success that is true, store.ErrUnknownOutcome (or the context's
// error: no claim), or a definite failure that is true; a success or a
// "not applied" that the store then contradicts fails the test. A late
// copy that lands after its operation was reported done or not done, and
// undoes the other writer's Put, contradicts the report.
func CheckWrites(t *testing.T, w Writes) {
	if w.OpTimeout <= 0 {
		w.OpTimeout = 10 * time.Second
	}
	caps := w.Direct.Capabilities()
	type op struct {
		name   string
		exists bool // the key exists before (with value "v0")
		need   bool
		run    func(ctx context.Context, s store.Store, key string, v0 store.Version) (store.Version, error)
	}
	ops := []op{
		{"put", true, true, func(ctx context.Context, s store.Store, key string, _ store.Version) (store.Version, error) {
			return s.Put(ctx, key, []byte("A"), store.Unconditional)
		}},
		{"put-if-absent", false, caps.CreateIfAbsent, func(ctx context.Context, s store.Store, key string, _ store.Version) (store.Version, error) {
			return s.Put(ctx, key, []byte("A"), store.IfAbsent)
		}},
		{"put-if-match", true, caps.CompareAndSwap, func(ctx context.Context, s store.Store, key string, v0 store.Version) (store.Version, error) {
			return s.Put(ctx, key, []byte("A"), store.IfMatch(v0))
		}},
		{"delete", true, true, func(ctx context.Context, s store.Store, key string, _ store.Version) (store.Version, error) {
			return "", s.Delete(ctx, key, store.Unconditional)
		}},
		{"delete-if-match", true, caps.CompareAndDelete, func(ctx context.Context, s store.Store, key string, v0 store.Version) (store.Version, error) {
			return "", s.Delete(ctx, key, store.IfMatch(v0))
		}},
	}
	ctx := context.Background()
	for _, o := range ops {
		if !o.need {
			continue
		}
		for _, a := range []Action{Drop, Late} {
			t.Run(o.name+"/"+a.String(), func(t *testing.T) {
				key := fmt.Sprintf("faultproxy/%s-%s-%d", o.name, a, time.Now().UnixNano())
				var v0 store.Version
				if o.exists {
					var err error
					if v0, err = w.Direct.Put(ctx, key, []byte("v0"), store.Unconditional); err != nil {
						t.Fatal(err)
					}
				}
				w.Faults.Arm(a)
				octx, cancel := context.WithTimeout(ctx, w.OpTimeout)
				v, err := o.run(octx, w.Via, key, v0)
				cancel()
				w.Faults.Clear()
				claim := "no claim"
				switch {
				case err == nil:
					claim = "done"
				case errors.Is(err, store.ErrUnknownOutcome), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
				default:
					claim = "not done"
				}
				t.Logf("%s %s: %v (%s)", o.name, a, err, claim)
				isPut := o.name[:3] == "put"
				if a == Drop {
					// Applied; the answer was lost. Nobody else wrote.
					e, gerr := w.Direct.Get(ctx, key)
					switch {
					case gerr != nil && !errors.Is(gerr, store.ErrNotFound):
						t.Fatal(gerr)
					case claim == "done" && isPut && (gerr != nil || !bytes.Equal(e.Value, []byte("A")) || e.Version != v):
						t.Errorf("reported done at %q, yet the key holds %q at %q (%v)", v, e.Value, e.Version, gerr)
					case claim == "done" && !isPut && gerr == nil:
						t.Errorf("delete reported done, yet the key holds %q at %q", e.Value, e.Version)
					case claim == "not done":
						applied := (isPut && gerr == nil && bytes.Equal(e.Value, []byte("A"))) || (!isPut && gerr != nil)
						if applied {
							t.Errorf("reported %v, yet the write was applied (the key holds %q, %v)", err, e.Value, gerr)
						}
					}
					return
				}
				// Late: another writer puts B once the operation has
				// returned (and, after a create, deletes it: the state a
				// late create could land on); then the held request
				// lands. Unless the outcome was left unknown, B (or the
				// absence) must survive it.
				vb, berr := w.Direct.Put(ctx, key, []byte("B"), store.Unconditional)
				if berr != nil {
					t.Fatal(berr)
				}
				if !o.exists {
					if err := w.Direct.Delete(ctx, key, store.Unconditional); err != nil {
						t.Fatal(err)
					}
				}
				w.Faults.Land()
				if w.Settle > 0 {
					time.Sleep(w.Settle)
				}
				e, gerr := w.Direct.Get(ctx, key)
				if gerr != nil && !errors.Is(gerr, store.ErrNotFound) {
					t.Fatal(gerr)
				}
				if claim != "no claim" && !o.exists && gerr == nil {
					t.Errorf("reported %s (%v), but its late copy created the key again after another writer deleted it: it holds %q at %q",
						claim, err, e.Value, e.Version)
				}
				if claim != "no claim" && o.exists && (gerr != nil || !bytes.Equal(e.Value, []byte("B")) || e.Version != vb) {
					t.Errorf("reported %s (%v), but its late copy landed afterwards over another writer's B at %q: the key holds %q at %q (%v)",
						claim, err, vb, e.Value, e.Version, gerr)
				}
			})
		}
	}
}
