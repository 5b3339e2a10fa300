package cas

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/store"
)

// Turns: the Updates of one key through one store value, in this process,
// take turns. Each attempt (read, fn, write, and the re-reads that resolve
// a write of unknown outcome) holds the key's turn; the others wait for it
// and read after it is done, so they see its write instead of racing it.
//
// Two goroutines of one process that update one key at once through one
// store can only race each other for nothing: both read the same version,
// at most one write applies, and the other is a read and a write the store
// serves in vain, on the same CPUs and commit rounds as the write that
// wins. Measured on latchkey serve (64 goroutines, one key,
// BenchmarkUpdateContended/server in tests/casbench): without turns
// 1.96–1.98 attempts per update and 73–88% of the one-goroutine rate;
// with them 1.00 attempts and 78–104%. Writers in other processes (or
// on other store values) still race, and lost races still back off.
//
// A turn is never a lock anyone depends on: the write stays conditional,
// and a waiter whose turn-holder has held it for longer than MaxDelay (a
// function or a request that hangs) stops waiting and makes its attempt
// anyway, as it would have without turns. The backoff after a lost race
// is slept without the turn. Waiting ends with ctx and respects Timeout.
// How long a holder has held the turn is measured on the monotonic clock,
// so a step of the wall clock neither stretches nor cuts the wait.
//
// Turns are kept in a map of the keys in use, each entry removed when its
// last user leaves; a store whose dynamic type cannot be compared (see
// remembers) gets none.
type turnKey struct {
	s   store.Store
	key string
}

type turn struct {
	token chan struct{} // holds one value while the turn is taken
	// since is when the current holder took it, as a duration since
	// origin: a reading of the monotonic clock, which a step of the wall
	// clock does not move (a UnixNano would: a step back of an hour would
	// make waiters wait MaxDelay plus the hour).
	since  atomic.Int64
	origin time.Time // now() when the turn was created
	users  int       // Updates holding or waiting for it (under turnsMu)
}

var (
	turnsMu sync.Mutex
	turns   = map[turnKey]*turn{}
)

// takeTurn waits for the turn of u's key and returns the function that
// gives it back (and must be called once). It returns an error when ctx
// ends, or errTimeout when Options.Timeout passes, while it waits.
func (u *updater) takeTurn(ctx context.Context) (func(), error) {
	if !remembers(u.s) {
		return func() {}, nil
	}
	k := turnKey{u.s, u.key}
	turnsMu.Lock()
	t := turns[k]
	if t == nil {
		t = &turn{token: make(chan struct{}, 1), origin: now()}
		turns[k] = t
	}
	t.users++
	turnsMu.Unlock()
	leave := func(held bool) {
		if held {
			<-t.token
		}
		turnsMu.Lock()
		if t.users--; t.users == 0 {
			delete(turns, k)
		}
		turnsMu.Unlock()
	}
	held, err := t.wait(ctx, u.o.MaxDelay, u.deadline())
	if err != nil {
		leave(false)
		return nil, err
	}
	return func() { leave(held) }, nil
}

// wait takes t's token. It reports false, without it, once one holder has
// held it for stale (it is stuck: go on without the turn); errTimeout when
// deadline (if not zero) comes first; ctx's error when ctx ends first.
func (t *turn) wait(ctx context.Context, stale time.Duration, deadline time.Time) (bool, error) {
	select {
	case t.token <- struct{}{}:
		t.took()
		return true, nil
	default:
	}
	timer := time.NewTimer(stale)
	defer timer.Stop()
	var end <-chan time.Time
	if !deadline.IsZero() {
		dl := time.NewTimer(deadline.Sub(now()))
		defer dl.Stop()
		end = dl.C
	}
	for {
		select {
		case t.token <- struct{}{}:
			t.took()
			return true, nil
		case <-timer.C:
			held := now().Sub(t.origin) - time.Duration(t.since.Load())
			if held >= stale {
				return false, nil
			}
			timer.Reset(stale - held)
		case <-end:
			return false, errTimeout
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
	}
}

// took records that the turn was taken now.
func (t *turn) took() { t.since.Store(int64(now().Sub(t.origin))) }

// deadline is when Options.Timeout ends, zero without one.
func (u *updater) deadline() time.Time {
	if u.o.Timeout <= 0 {
		return time.Time{}
	}
	return u.start.Add(u.o.Timeout)
}
