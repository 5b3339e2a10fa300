package consulstore

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
