package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/clocktest"
	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/publish/publishtest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// manifestHook calls after once, when the first write of a manifest has
// been made and before it returns.
type manifestHook struct {
	store.Store
	after func()
}

func (h *manifestHook) Put(ctx context.Context, key string, v []byte, c store.Condition) (store.Version, error) {
	ver, err := h.Store.Put(ctx, key, v, c)
	if strings.HasSuffix(key, "/manifest") && h.after != nil {
		h.after()
		h.after = nil
	}
	return ver, err
}

// A step of the wall clock, by an hour either way, between Begin and the
// pointer swap or between the manifest and the swap, neither refuses a
// commit that is within MaxAge and MaxSwapDelay nor lets through one that
// is past them: both are measured on the monotonic clock. (Before, the
// swap delay was measured from the manifest's Created, a wall-clock time
// without its monotonic reading: a step forward refused a prompt commit,
// and a step back let a late one through.)
func TestCommitLimitsIgnoreWallClockSteps(t *testing.T) {
	const maxAge = 10 * time.Minute
	for _, c := range []struct {
		name    string
		step    time.Duration
		elapsed time.Duration
		hook    string // "begin": after Begin; "manifest": after the manifest's write
		refused bool
	}{
		{"age/forward", time.Hour, time.Minute, "begin", false},
		{"age/back", -time.Hour, maxAge + time.Second, "begin", true},
		{"swap/forward", time.Hour, time.Second, "manifest", false},
		{"swap/back", -time.Hour, publish.MaxSwapDelay + time.Second, "manifest", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			clk := &clocktest.Clock{}
			mem := memstore.New()
			publishtest.Publish(t, ctx, mem, "st", map[string]string{"f": "old"})
			pass := func() { clk.Step(c.step); clk.Advance(c.elapsed) }
			s := &manifestHook{Store: mem}
			w, err := publish.Begin(ctx, s, "st", &publish.Options{Now: clk.Now, MaxAge: maxAge})
			if err != nil {
				t.Fatal(err)
			}
			publishtest.Put(t, ctx, w, "f", "new")
			if c.hook == "begin" {
				pass()
			} else {
				s.after = pass
			}
			_, err = w.Commit(ctx)
			snap, oerr := publish.Open(ctx, mem, "st")
			if oerr != nil {
				t.Fatal(oerr)
			}
			switch {
			case c.refused && !errors.Is(err, publish.ErrAbandoned):
				t.Errorf("Commit %v after the %s, with the wall clock stepped by %v = %v, want ErrAbandoned", c.elapsed, c.hook, c.step, err)
			case !c.refused && err != nil:
				t.Errorf("Commit %v after the %s, with the wall clock stepped by %v = %v, want it committed", c.elapsed, c.hook, c.step, err)
			case !c.refused && snap.Generation() != w.ID():
				t.Errorf("the pointer names %s, want the committed %s", snap.Generation(), w.ID())
			case c.refused && snap.Generation() == w.ID():
				t.Errorf("the refused generation %s was published", w.ID())
			}
		})
	}
}
