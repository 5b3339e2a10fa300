package consulstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
)

// TestStalledServerRequestsEnd: a server that stops answering (SIGSTOP:
// its kernel still accepts and buffers) no longer holds requests until it
// resumes. Each request has Options.RequestTimeout once it has its
// connection: a write ends ErrUnknownOutcome, a read ErrTransient, both
// within a few timeouts, with no deadline of the caller's. Before, both
// waited for as long as the server was stopped.
func TestStalledServerRequestsEnd(t *testing.T) {
	srv := servertest.Start(t, nil)
	p := newProxy(t, srv.Addr)
	s, err := Open(context.Background(), &Options{Address: p.Addr(), Prefix: testutil.RandomName("stall-"), RequestTimeout: 300 * time.Millisecond})
	testutil.Opened(t, s, err)
	if _, err := s.Put(context.Background(), "k", []byte("1"), store.Unconditional); err != nil {
		t.Fatal(err)
	}
	p.stalled.Store(true)
	defer p.stalled.Store(false)
	ended := func(what string, f func() error, want error) {
		t.Helper()
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- f() }()
		select {
		case err := <-done:
			if !errors.Is(err, want) {
				t.Errorf("%s on a stalled server: %v; want %v", what, err, want)
			}
			t.Logf("%s ended after %v: %v", what, time.Since(start).Round(time.Millisecond), err)
		case <-time.After(15 * time.Second):
			t.Fatalf("%s on a stalled server still waiting after 15s", what)
		}
	}
	ended("Put", func() error {
		_, err := s.Put(context.Background(), "k", []byte("2"), store.Unconditional)
		return err
	}, store.ErrUnknownOutcome)
	ended("Get", func() error { _, err := s.Get(context.Background(), "k"); return err }, store.ErrTransient)
}

// stalledFirst opens a Store (o, with Address and Addresses set) on two
// proxies of one in-process server, p1 its first address, writes "k"
// (version v) and then stalls p1 until the test ends. ctx ends after 30 s.
func stalledFirst(t *testing.T, o Options) (ctx context.Context, s *Store, v store.Version, p1, p2 *proxy) {
	srv := servertest.Start(t, nil)
	p1, p2 = newProxy(t, srv.Addr), newProxy(t, srv.Addr)
	o.Address, o.Addresses = p1.Addr(), []string{p2.Addr()}
	s, err := Open(context.Background(), &o)
	testutil.Opened(t, s, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	v, err = s.Put(ctx, "k", []byte("1"), store.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	p1.stalled.Store(true)
	t.Cleanup(func() { p1.stalled.Store(false) })
	return ctx, s, v, p1, p2
}

// TestStalledAddressFailsOver: with a second address of the same cluster,
// a read goes on to it when the first stalls, and the next requests stay
// there; a write in flight on the stalled one is an unknown outcome (it
// may land when the server resumes), settled by Put's re-read through the
// live address.
func TestStalledAddressFailsOver(t *testing.T) {
	ctx, s, v, _, p2 := stalledFirst(t, Options{Prefix: testutil.RandomName("failover-"), RequestTimeout: 300 * time.Millisecond})
	if e, err := s.Get(ctx, "k"); err != nil || e.Version != v {
		t.Fatalf("Get with the first address stalled = %+v, %v; want version %s", e, err, v)
	}
	for i := range 3 {
		if _, err := s.Put(ctx, "k", []byte{byte(i)}, store.Unconditional); err != nil {
			t.Fatalf("Put %d after moving on: %v", i, err)
		}
	}
	if p2.total.Load() == 0 {
		t.Fatal("nothing went to the second address")
	}
}

// TestReadDoesNotWaitOutAStalledAddress: a read with no answer after
// Options.HedgeDelay is sent again to the next address, the first stays
// in flight, and the first answer wins; the next requests go to the
// address that answered. Before, a read waited out its whole
// RequestTimeout (10s by default) on an address whose server was stopped,
// or whose requests were held by a leader that was (the failover
// harness, tests/failover TestFailoverConsul seed 2: the counter and the
// lock stalled for the whole 6.4 s stop of the leader although the two
// other servers had elected a new one after 2.7 s).
func TestReadDoesNotWaitOutAStalledAddress(t *testing.T) {
	ctx, s, v, p1, _ := stalledFirst(t, Options{Prefix: testutil.RandomName("hedge-")})
	start := time.Now()
	e, err := s.Get(ctx, "k")
	took := time.Since(start)
	if err != nil || e.Version != v {
		t.Fatalf("Get with the first address stalled = %+v, %v; want version %s", e, err, v)
	}
	if took > DefaultHedgeDelay+2*time.Second {
		t.Fatalf("Get with the first address stalled took %v; want about the hedge delay %v", took, DefaultHedgeDelay)
	}
	t.Logf("Get took %v with the first address stalled", took.Round(time.Millisecond))
	before := p1.total.Load()
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	defer wcancel()
	if _, err := s.Put(wctx, "k", []byte("2"), store.Unconditional); err != nil {
		t.Fatalf("Put after the read moved on: %v", err)
	}
	if n := p1.total.Load() - before; n != 0 {
		t.Fatalf("the Put after the read moved on opened %d connections to the stalled address", n)
	}
}
