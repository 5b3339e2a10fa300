package failover

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
)

// Event is one failure a workload saw, for reading a stall.
type Event struct {
	At        time.Duration
	Contender int
	What      string
}

// history is what the workloads saw, on the run's monotonic clock.
type history struct {
	since func() time.Duration

	mu           sync.Mutex
	holdings     []Holding
	fencedOK     []time.Duration   // completions of accepted fenced writes
	fencedErrors map[string]int    // refused fenced writes, by kind
	runErrors    []Event           // Locker.Run calls that failed before the run's end
	errSamples   map[string]string // the first error of each kind, fenced writes and increments
	incOK        []time.Duration   // completions of acknowledged increments
	increments   map[string]map[string]Outcome

	// unconditional breaks the counter on purpose (a read, then a write
	// that ignores what happened in between), to show that the checkers
	// catch a lost update.
	unconditional bool
	// staleReads breaks the store on purpose (Gets of the checked keys
	// answered from a cache up to 100 ms old), to show that the
	// linearizability checker catches stale reads.
	staleReads bool
	stale      sync.Map // the stale reads' cache

	kv  kvLog       // the Gets and Puts of the checked keys (porcupine.go)
	pub *pubHistory // the publish workload's (publish_workload.go)
	// the lock run workload's (lockrun_workload.go), when it runs
	lockRun *lockRunHistory
}

// recorded wraps s so that the calls on the checked keys are recorded.
func (h *history) recorded(s store.Store) store.Store {
	if h.staleReads {
		s = &staleStore{Store: s, cache: &h.stale}
	}
	return &kvRecorder{Store: s, since: h.since, match: workloadKey, log: &h.kv}
}

func newHistory(since func() time.Duration) *history {
	return &history{since: since, pub: newPubHistory(since), lockRun: &lockRunHistory{since: since, samples: map[string]string{}}, fencedErrors: map[string]int{}, errSamples: map[string]string{}, increments: map[string]map[string]Outcome{}}
}

// contend takes the lock at lockKey again and again until ctx ends; each
// holding writes fencedKey every 20ms for 100–400ms, then releases.
func (h *history) contend(ctx context.Context, s store.Store, id int, lockKey, fencedKey string, ttl time.Duration, rng *rand.Rand) error {
	lk, err := lease.NewLocker(s, lockKey, &lease.Options{Holder: fmt.Sprintf("c%d", id), TTL: ttl})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		hold := 100*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond)))
		err := lk.Run(ctx, func(lctx context.Context, l *lease.Lease) error {
			h.hold(lctx, s, id, fencedKey, l.Token(), hold)
			return nil
		})
		pause := time.Duration(rng.Int64N(int64(100 * time.Millisecond)))
		if err != nil && ctx.Err() == nil {
			pause = 50 * time.Millisecond
			h.mu.Lock()
			h.sample("lock run", err)
			h.runErrors = append(h.runErrors, Event{At: h.since(), Contender: id, What: err.Error()})
			h.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	return nil
}

// hold is one holding: fenced writes until the lease ends or d passes.
func (h *history) hold(lctx context.Context, s store.Store, id int, key string, token uint64, d time.Duration) {
	start := h.since()
	stop := time.After(d)
	for seq := 0; ; seq++ {
		value := fmt.Appendf(nil, "c%d t%d w%d", id, token, seq)
		_, err := lease.FencedPut(lctx, h.recorded(s), key, value, token)
		h.fenced(err)
		select {
		case <-lctx.Done():
		case <-stop:
		case <-time.After(20 * time.Millisecond):
			continue
		}
		break
	}
	end := h.since()
	h.mu.Lock()
	h.holdings = append(h.holdings, Holding{Contender: id, Token: token, Start: start, End: end})
	h.mu.Unlock()
}

func (h *history) fenced(err error) {
	now := h.since()
	h.mu.Lock()
	defer h.mu.Unlock()
	kind := "other"
	switch {
	case err == nil:
		h.fencedOK = append(h.fencedOK, now)
		return
	case errors.Is(err, lease.ErrFenced):
		kind = "fenced"
	case errors.Is(err, store.ErrUnknownOutcome):
		kind = "unknown"
	}
	h.fencedErrors[kind]++
	h.sample("fenced "+kind, err)
}

// sample keeps the first error of a kind; the caller holds mu.
func (h *history) sample(kind string, err error) {
	if _, ok := h.errSamples[kind]; !ok {
		h.errSamples[kind] = err.Error()
	}
}

// increment runs cas.Update increments until ctx ends, each appending a
// unique id to the value at the key that key() names when it starts.
// Every Update gets its own 20s budget, not ctx, so that the end of the
// run does not turn writes in flight into unknown outcomes.
func (h *history) increment(ctx context.Context, s store.Store, g int, key func() string) {
	for n := 0; ctx.Err() == nil; n++ {
		id := fmt.Sprintf("%d.%d", g, n)
		k := key()
		uctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := h.incrementOnce(uctx, h.recorded(s), k, id)
		cancel()
		o := Acked
		switch {
		case errors.Is(err, store.ErrUnknownOutcome):
			o = Unknown
		case err != nil:
			o = Refused
		}
		now := h.since()
		h.mu.Lock()
		if h.increments[k] == nil {
			h.increments[k] = map[string]Outcome{}
		}
		h.increments[k][id] = o
		if o == Acked {
			h.incOK = append(h.incOK, now)
		} else {
			h.sample(fmt.Sprintf("increment %v", o), err)
		}
		h.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (h *history) incrementOnce(ctx context.Context, s store.Store, key, id string) error {
	appendID := func(cur []byte) []byte {
		v := slices.Clone(cur)
		if len(v) > 0 {
			v = append(v, ' ')
		}
		return append(v, id...)
	}
	if h.unconditional {
		e, err := s.Get(ctx, key)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		_, err = s.Put(ctx, key, appendID(e.Value), store.Unconditional)
		return err
	}
	_, err := cas.Update(ctx, s, key, func(cur []byte, exists bool) (cas.Decision, error) {
		return cas.Set(appendID(cur)), nil
	}, &cas.Options{UniqueValues: true})
	return err
}
