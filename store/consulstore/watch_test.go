package consulstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
)

// A server that answers every blocking query at once, unchanged (one that
// does not block), is not asked as fast as it answers: after a few quick
// repeats the watch loop backs off (50ms doubling to 1s).
func TestWaitChangeRateLimitsQuickAnswers(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("X-Consul-Index", "7")
		w.Header().Set("X-Consul-LastContact", "0")
		w.Header().Set("X-Consul-KnownLeader", "true")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[{"LockIndex":0,"Key":"p/k","Flags":0,"Value":null,"CreateIndex":7,"ModifyIndex":7}]`))
	}))
	defer srv.Close()
	s, err := Open(context.Background(), &Options{Address: srv.Listener.Addr().String(), Prefix: "p"})
	testutil.Opened(t, s, err)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := s.WaitChange(ctx, "k", "7"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitChange = %v, want the context's deadline", err)
	}
	// Unthrottled this is thousands of requests; throttled, the first few
	// plus pauses of 25-50ms, 50-100ms, 100-200ms, 200-400ms, 0.5-1s….
	if got := n.Load(); got > 15 {
		t.Fatalf("%d requests in 1.5s to a server that never blocks", got)
	}
	// A change still ends the wait at once.
	if err := s.WaitChange(context.Background(), "k", "6"); err != nil {
		t.Fatalf("WaitChange on a stale version: %v", err)
	}
}

// A WaitChange sends two requests: the read, and one blocking query from
// that read's index, which ends with the change. Its loop used to start
// at index 0, so its first query answered at once with what the read had
// just said: a third request per watch (cas's line watches a ticket per
// waiter, so on latchkey serve with 64 processes that was about one
// request in ten).
func TestWaitChangeSendsTheReadAndOneBlockingQuery(t *testing.T) {
	changed := make(chan struct{})
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query().Get("index"))
		mu.Unlock()
		idx := "7"
		if r.URL.Query().Get("index") != "" {
			select {
			case <-changed:
				idx = "8"
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("X-Consul-Index", idx)
		w.Header().Set("X-Consul-KnownLeader", "true")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"LockIndex":0,"Key":"p/k","Flags":0,"Value":null,"CreateIndex":7,"ModifyIndex":%s}]`, idx)
	}))
	defer srv.Close()
	s, err := Open(context.Background(), &Options{Address: srv.Listener.Addr().String(), Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	time.AfterFunc(100*time.Millisecond, func() { close(changed) })
	if err := s.WaitChange(context.Background(), "k", "7"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queries) != 2 || queries[0] != "" || queries[1] != "7" {
		t.Fatalf("requests' ?index=: %q, want the read (none) and one blocking query from 7", queries)
	}
}

// A watcher that joins a hub which has not answered yet and waits from an
// index past the watcher's read (a read a stale server answered) returns
// at once for its caller to re-read: a change between its read and the
// hub's index would not wake the hub.
func TestWaitChangeJoiningALaterHubReturnsEarly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // every query blocks
	}))
	defer srv.Close()
	s, err := Open(context.Background(), &Options{Address: srv.Listener.Addr().String(), Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, first := joinHub(s, "p/k", "15", 15)
	defer h.leave(first)
	h2, late := joinHub(s, "p/k", "10", 10)
	defer h2.leave(late)
	select {
	case err := <-late.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Second):
		t.Fatal("a watcher whose read is older than the hub's index still waits")
	}
	select {
	case <-first.done:
		t.Fatal("the hub's own watcher is done with no change")
	default:
	}
}
