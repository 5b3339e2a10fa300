package leasetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
)

// testContention runs contenders whose wall clocks are off by up to ±2 TTL,
// each through a store that injects transient failures and ambiguous
// outcomes (one of them through a very flaky connection, so that it loses
// leases while holding them), over many holdings. A shared flag catches two live holdings at
// once; a fenced log in the store records every holding's start and end:
// each start is followed by its own end (or, for a lost holding, by the
// next holding's start), and tokens strictly increase.
func testContention(t *testing.T, e *env) {
	const contenders = 5
	const logKey = "resources/log"
	seed := rand.Uint64()
	if v := os.Getenv("LATCHKEY_LEASETEST_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("LATCHKEY_LEASETEST_SEED=%q: %v", v, err)
		}
		seed = n
	}
	t.Logf("seed %d (rerun with LATCHKEY_LEASETEST_SEED=%d)", seed, seed)
	var (
		active    atomic.Uint64
		rounds    atomic.Int64
		mu        sync.Mutex
		tokens    []uint64
		wg        sync.WaitGroup
		lostRun   atomic.Int64
		flakyHeld atomic.Int64
		late      atomic.Int64 // real clock only: holders scheduled too late to stop in time
		// real clock only: holders whose start line the fence refused,
		// because they were scheduled so late that a successor had
		// written; the log must then show no line of theirs.
		fencedStarts atomic.Int64
	)
	// fencedLate reports a write the fence refused because its holder ran
	// late. On fake time no holder runs late, so it is always a failure.
	fencedLate := func(err error) bool {
		if !e.synct && errors.Is(err, lease.ErrFenced) {
			late.Add(1)
			return true
		}
		return false
	}
	appendLog := func(line string, tok uint64) error {
		v, _, _, err := lease.FencedGet(t.Context(), e.s, logKey)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		_, err = lease.FencedPut(t.Context(), e.s, logKey, append(v, line+"\n"...), tok)
		return err
	}
	for i := range contenders {
		skew := time.Duration(i-contenders/2) * e.ttl // −2 TTL … +2 TTL
		fs := faultstore.New(e.s, seed+uint64(i))
		baseFaults := func() {
			fs.Reset()
			fs.Inject(faultstore.Rule{Ops: faultstore.Writes, Fault: faultstore.ApplyThenFail, Prob: 0.03})
			fs.Inject(faultstore.Rule{Ops: faultstore.AllOps, Fault: faultstore.FailBefore, Prob: 0.03})
		}
		baseFaults()
		o := e.opts(fmt.Sprintf("c%d", i))
		o.Now = func() time.Time { return time.Now().Add(skew) }
		lk := e.locker(t, fs, o)
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() {
			for rounds.Add(1) <= int64(e.h.Rounds) {
				err := lk.Run(t.Context(), func(ctx context.Context, l *lease.Lease) error {
					if prev := active.Swap(l.Token()); prev != 0 {
						if e.synct {
							t.Errorf("token %d acquired while token %d is held", l.Token(), prev)
						} else {
							late.Add(1)
						}
					}
					mu.Lock()
					if n := len(tokens); n > 0 && tokens[n-1] >= l.Token() {
						// On the real clock a holder can be descheduled
						// between its acquisition and this line for longer
						// than its validity, and its successor gets here
						// first; the fenced log below keeps tokens strict.
						if e.synct {
							t.Errorf("token %d acquired after token %d", l.Token(), tokens[n-1])
						} else {
							late.Add(1)
						}
					}
					tokens = append(tokens, l.Token())
					mu.Unlock()
					defer active.CompareAndSwap(l.Token(), 0)
					if i == 0 {
						// While it holds, contender 0's writes mostly fail,
						// so that it loses some leases it holds.
						flakyHeld.Add(1)
						fs.Inject(faultstore.Rule{Ops: faultstore.Writes, Fault: faultstore.FailBefore, Prob: 0.9})
						defer baseFaults()
					}
					if err := appendLog(fmt.Sprintf("start %d", l.Token()), l.Token()); err != nil {
						if fencedLate(err) {
							fencedStarts.Add(1)
							return nil
						}
						t.Errorf("holder %d: log start: %v", l.Token(), err)
					}
					maxHold := 3 * e.ttl / 2
					if !e.synct {
						maxHold = e.ttl / 2
					}
					hold := time.NewTimer(time.Duration(rng.Int64N(int64(maxHold))))
					defer hold.Stop()
					select {
					case <-ctx.Done():
						return nil // lost (faults can starve renewals): stop at once
					case <-hold.C:
					}
					if err := appendLog(fmt.Sprintf("end %d", l.Token()), l.Token()); err != nil && !fencedLate(err) {
						t.Errorf("holder %d: log end: %v", l.Token(), err)
					}
					return nil
				})
				if errors.Is(err, lease.ErrLost) {
					lostRun.Add(1)
				} else if err != nil && t.Context().Err() == nil && !injected(err) {
					t.Errorf("Run: %v", err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d holdings (%d by the flaky contender), %d lost to injected faults", len(tokens), flakyHeld.Load(), lostRun.Load())
	if n := late.Load(); n > 0 {
		t.Logf("%d times a holder was scheduled too late to stop before its successor started (%d start lines fenced off); the fenced log must show none of their writes", n, fencedStarts.Load())
	}
	if len(tokens) < e.h.Rounds/2 {
		t.Errorf("only %d of %d rounds held the lease", len(tokens), e.h.Rounds)
	}
	log, _ := fenced(t, e.s, logKey)
	checkLog(t, strings.Split(strings.TrimSpace(log), "\n"), len(tokens)-int(fencedStarts.Load()))
}

// injected reports whether err comes from an injected fault that Run
// could not resolve within its budget (acquisition or release).
func injected(err error) bool { return errors.Is(err, faultstore.ErrInjected) }

// checkLog checks the fenced log: "start T" lines with strictly increasing
// T, each followed by "end T" or by the next start.
func checkLog(t *testing.T, lines []string, holdings int) {
	t.Helper()
	var open, last uint64
	starts := 0
	for i, ln := range lines {
		var tok uint64
		switch {
		case scan(ln, "start %d", &tok):
			if tok <= last {
				t.Fatalf("log line %d %q: token not above %d", i, ln, last)
			}
			open, last = tok, tok
			starts++
		case scan(ln, "end %d", &tok):
			if tok != open {
				t.Fatalf("log line %d %q: ends a holding that is not the open one (%d)", i, ln, open)
			}
			open = 0
		default:
			t.Fatalf("log line %d: %q", i, ln)
		}
	}
	if starts != holdings {
		t.Errorf("log has %d holdings, contenders saw %d", starts, holdings)
	}
}

func scan(s, format string, tok *uint64) bool {
	_, err := fmt.Sscanf(s, format, tok)
	return err == nil
}
