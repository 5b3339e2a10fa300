package lease

import (
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// Two goroutines sharing a Locker that both read a record carrying the
// nonce of the Locker's pending acquiring write must not both adopt it.
// The hook holds each of them just after it looked at the pending write
// until both have, which is the interleaving that gave two holders of
// one acquisition (3 in 20,000 rounds without the hook).
func TestSharedLockerAdoptsPendingOnce(t *testing.T) {
	s := memstore.New()
	lk, err := NewLocker(s, "k", &Options{Holder: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := Record{Holder: "a", Nonce: newNonce(), Token: 1, TTL: time.Minute, Acquired: now, Renewed: now}
	if _, err := s.Put(t.Context(), "k", rec.encode(), store.IfAbsent); err != nil {
		t.Fatal(err)
	}
	lk.pending = &pendingWrite{nonce: rec.Nonce, start: time.Now(), rec: rec}

	var mu sync.Mutex
	arrived, both := 0, make(chan struct{})
	adoptHook = func() {
		mu.Lock()
		arrived++
		if arrived == 2 {
			close(both)
		}
		mu.Unlock()
		<-both
	}
	defer func() { adoptHook = nil }()

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = lk.TryAcquire(t.Context())
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("%d goroutines adopted the one pending acquisition (errors %v), want 1", won, errs)
	}
}
