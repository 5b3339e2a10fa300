package leasetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
)

// slowResponses applies each Put at once but answers it only after delay:
// the holder learns of its renewals late. A holder that counted its
// validity from the answer instead of from the moment it sent the request
// would overstay.
type slowResponses struct {
	store.Store
	delay time.Duration
}

func (s slowResponses) Put(ctx context.Context, key string, v []byte, cond store.Condition) (store.Version, error) {
	ver, err := s.Store.Put(ctx, key, v, cond)
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return "", store.NewOpError("slow", "put", key, store.ErrUnknownOutcome, ctx.Err())
	}
	return ver, err
}

// testLostBeforeTakeover cuts a renewing holder off from the store (every
// write it sends fails) and checks that its Done closes and its context is
// cancelled at least Margin before a contender's takeover succeeds. On
// fake time the holder's writes are also answered 1.5×Margin after they
// applied.
func testLostBeforeTakeover(t *testing.T, e *env) {
	cut := faultstore.New(e.s, 1)
	o := e.opts("holder")
	var hs store.Store = cut
	if e.synct {
		hs = slowResponses{Store: cut, delay: 3 * o.Margin / 2}
	}
	holder := e.locker(t, hs, o)
	l, err := holder.Hold(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e.sleep(o.TTL) // a few renews succeed
	if l.Err() != nil {
		if e.synct {
			t.Fatalf("lease lost while renewing normally: %v", l.Err())
		}
		t.Logf("the holder was scheduled too late to renew: %v; nothing left to check", l.Err())
		return
	}
	cutAt := time.Now()
	cut.Inject(faultstore.Rule{Ops: faultstore.Writes, Fault: faultstore.FailBefore})

	lostAt := make(chan time.Time, 1)
	go func() {
		<-l.Context().Done()
		lostAt <- time.Now()
	}()
	c, err := e.locker(t, nil, e.opts("contender")).Acquire(t.Context())
	takenAt := time.Now()
	if err != nil {
		t.Fatalf("contender Acquire: %v", err)
	}
	// Every renew that succeeded was sent before the cut, so the holder's
	// validity ends by cutAt + TTL − Margin, and the contender, which saw
	// the last of those writes unchanged for a full TTL, took over no
	// earlier than Margin after that. This is strict on either clock.
	if d := l.ValidUntil().Sub(cutAt); d > o.TTL-o.Margin {
		t.Errorf("holder's validity ends %v after its last renew could have started; want at most TTL−Margin = %v", d, o.TTL-o.Margin)
	}
	if d := takenAt.Sub(l.ValidUntil()); d < o.Margin {
		t.Errorf("takeover came %v after the holder's validity ended; want at least Margin %v", d, o.Margin)
	}
	var lost time.Time
	if e.synct {
		// On fake time the holder's timer has run: Done closed exactly at
		// the end of its validity, Margin or more before the takeover.
		select {
		case lost = <-lostAt:
		default:
			t.Fatal("the contender took over while the cut-off holder's context was still live")
		}
		if gap := takenAt.Sub(lost); gap < o.Margin {
			t.Errorf("takeover came %v after the holder gave up; want at least Margin %v", gap, o.Margin)
		}
	} else {
		// On the real clock the timer that cancels the context may run
		// late on a loaded machine (the pause fencing is for); it must
		// still run.
		select {
		case lost = <-lostAt:
		case <-time.After(10 * time.Second):
			t.Fatal("the cut-off holder's context is still live 10s after the takeover")
		}
		if !lost.Before(takenAt) {
			t.Logf("the holder's context was cancelled %v after the takeover: its timer ran late", lost.Sub(takenAt))
		}
	}
	if !errors.Is(l.Err(), lease.ErrLost) || !errors.Is(context.Cause(l.Context()), lease.ErrLost) {
		t.Errorf("Err = %v, context cause = %v; want ErrLost", l.Err(), context.Cause(l.Context()))
	}
	wantSuccessor(t, c, l, "takeover")
}

// testZombie: a holder that stops renewing (paused) is taken over after a
// TTL; when it resumes, the fenced resource refuses its writes.
func testZombie(t *testing.T, e *env) {
	const res = "resources/report"
	zombie := mustAcquire(t, e.locker(t, nil, e.opts("zombie")))
	if _, err := lease.FencedPut(t.Context(), e.s, res, []byte("zombie-1"), zombie.Token()); err != nil {
		t.Fatalf("FencedPut by the holder: %v", err)
	}
	// The zombie is paused: no renews. A contender waits it out.
	looked := time.Now()
	c, err := e.locker(t, nil, e.opts("contender")).Acquire(t.Context())
	if err != nil {
		t.Fatalf("contender Acquire: %v", err)
	}
	if c.Token() <= zombie.Token() {
		t.Fatalf("takeover token %d not above %d", c.Token(), zombie.Token())
	}
	if _, err := lease.FencedPut(t.Context(), e.s, res, []byte("contender"), c.Token()); err != nil {
		t.Fatalf("FencedPut by the new holder: %v", err)
	}
	// The zombie resumes and writes without checking its lease.
	_, err = lease.FencedPut(t.Context(), e.s, res, []byte("zombie-2"), zombie.Token())
	if !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("zombie FencedPut: %v, want ErrFenced", err)
	}
	if v, tok := fenced(t, e.s, res); v != "contender" || tok != c.Token() {
		t.Errorf("resource = %q token %d, want %q token %d", v, tok, "contender", c.Token())
	}
	// The zombie wrote before the contender's first look.
	e.checkStopped(t, zombie, looked.Add(e.validity()), "zombie")
	if err := zombie.Release(t.Context()); !errors.Is(err, lease.ErrLost) {
		t.Errorf("zombie Release: %v, want ErrLost", err)
	}
	if _, err := lease.FencedPut(t.Context(), e.s, res, []byte("contender-2"), c.Token()); err != nil {
		t.Errorf("a second FencedPut with the same token: %v", err)
	}
}

// testRunLost: when renewals fail for a TTL, Run cancels fn's context with
// ErrLost as the cause and reports ErrLost although fn returned nil.
func testRunLost(t *testing.T, e *env) {
	cut := faultstore.New(e.s, 1)
	lk := e.locker(t, cut, e.opts("holder"))
	var cause error
	err := lk.Run(t.Context(), func(ctx context.Context, l *lease.Lease) error {
		cut.Inject(faultstore.Rule{Ops: faultstore.Writes, Fault: faultstore.FailBefore})
		<-ctx.Done()
		cause = context.Cause(ctx)
		return nil
	})
	if !errors.Is(err, lease.ErrLost) || !errors.Is(cause, lease.ErrLost) {
		t.Fatalf("Run = %v, fn's context cause = %v; want ErrLost for both", err, cause)
	}
}
