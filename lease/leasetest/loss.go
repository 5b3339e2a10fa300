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
		return "", store.Errorf("slow", "put", key, store.ErrUnknownOutcome, ctx.Err())
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
	lastOK := time.Now()
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
	var lost time.Time
	select {
	case lost = <-lostAt:
	default:
		t.Fatal("the contender took over while the cut-off holder's context was still live")
	}
	if !errors.Is(l.Err(), lease.ErrLost) || !errors.Is(context.Cause(l.Context()), lease.ErrLost) {
		t.Errorf("Err = %v, context cause = %v; want ErrLost", l.Err(), context.Cause(l.Context()))
	}
	// On fake time the gap is exactly Margin or more; on the real clock the
	// holder's timer may fire late, but never after the takeover.
	if gap := takenAt.Sub(lost); gap <= 0 || (e.synct && gap < o.Margin) {
		t.Errorf("takeover came %v after the holder gave up; want at least Margin %v", gap, o.Margin)
	}
	if e.synct {
		if d := lost.Sub(lastOK); d > o.TTL-o.Margin {
			t.Errorf("holder gave up %v after its last renew could have started; want at most TTL−Margin = %v", d, o.TTL-o.Margin)
		}
	}
	if c.Token() != l.Token()+1 {
		t.Errorf("takeover token = %d, want %d", c.Token(), l.Token()+1)
	}
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
	select {
	case <-zombie.Done():
	default:
		t.Error("the zombie's Done is open after the takeover")
	}
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
