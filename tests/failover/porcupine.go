package failover

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

// The KV history of the workloads' keys (the fenced key and the counter
// keys) is recorded at the store's interface, every Get and Put with its
// call and return on the run's monotonic clock, and checked with
// porcupine against a sequential model of one register per key, storetest.KVModel,
// the model of storetest's linearizability subtests. A Put that failed with
// store.ErrUnknownOutcome may have happened, and may still happen: it is
// recorded with a return after every other event and an output marked
// unknown, which the model accepts whether or not it applied. A call that
// failed otherwise changed nothing (the store contract) and is left out,
// as is a read that failed.

// Linearizability is the verdict of CheckLinearizable.
type Linearizability struct {
	Ops, Unknown int
	Result       porcupine.CheckResult // Ok, Illegal, or Unknown (the search timed out)
	Keys         int
}

func (l Linearizability) String() string {
	return fmt.Sprintf("%s (%d ops on %d keys, %d of unknown outcome)", l.Result, l.Ops, l.Keys, l.Unknown)
}

// CheckLinearizable checks a recorded history within timeout.
func CheckLinearizable(ops []porcupine.Operation, timeout time.Duration) Linearizability {
	l := Linearizability{Ops: len(ops)}
	keys := map[string]bool{}
	for _, op := range ops {
		keys[storetest.KVKey(op.Input)] = true
		if storetest.KVUnknown(op.Output) {
			l.Unknown++
		}
	}
	l.Keys = len(keys)
	l.Result = porcupine.CheckOperationsTimeout(storetest.KVModel, ops, timeout)
	return l
}

// kvRecorder is a store.Store that records the Gets and Puts of the keys
// that match, and passes every call on to the store it wraps. Give it
// only to callers that need nothing but Get and Put (cas.Update,
// lease.FencedPut): it hides the wrapped store's Txn and WaitChange.
type kvRecorder struct {
	store.Store
	since func() time.Duration
	match func(key string) bool
	log   *kvLog
}

// kvLog is a history shared by several recorders.
type kvLog struct {
	mu  sync.Mutex
	ops []porcupine.Operation
}

// never is the return time of a put of unknown outcome: after everything.
const never = math.MaxInt64

// add returns the function that records a call made at call, given its
// input and output (storetest.KVGet and KVPut give both).
func (r *kvRecorder) add(call int64) func(in, out any) {
	return func(in, out any) {
		ret := int64(r.since())
		if storetest.KVUnknown(out) {
			ret = never
		}
		r.log.mu.Lock()
		r.log.ops = append(r.log.ops, porcupine.Operation{Input: in, Call: call, Output: out, Return: ret})
		r.log.mu.Unlock()
	}
}

func (r *kvRecorder) Get(ctx context.Context, key string) (store.Entry, error) {
	call := int64(r.since())
	e, err := r.Store.Get(ctx, key)
	if r.match(key) {
		switch {
		case err == nil:
			r.add(call)(storetest.KVGet(key, true, string(e.Value), e.Version))
		case errors.Is(err, store.ErrNotFound):
			r.add(call)(storetest.KVGet(key, false, "", ""))
		}
	}
	return e, err
}

func (r *kvRecorder) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	call := int64(r.since())
	v, err := r.Store.Put(ctx, key, value, cond)
	if r.match(key) {
		switch {
		case err == nil:
			r.add(call)(storetest.KVPut(key, string(value), cond, true, false, v))
		case errors.Is(err, store.ErrUnknownOutcome):
			r.add(call)(storetest.KVPut(key, string(value), cond, false, true, ""))
		case errors.Is(err, store.ErrConflict):
			r.add(call)(storetest.KVPut(key, string(value), cond, false, false, ""))
		}
	}
	return v, err
}

// workloadKey says whether a key is one of the workloads' checked keys.
func workloadKey(key string) bool {
	return key == "fenced" || strings.HasPrefix(key, "counter/")
}

// staleStore is a deliberately broken store: its Gets are answered from
// a cache of the last answer when that is less than 100 ms old, as a
// client reading from a lagging replica would be.
type staleStore struct {
	store.Store
	cache *sync.Map // key -> staleEntry, shared by the run's stores
}

type staleEntry struct {
	e  store.Entry
	at time.Time
}

func (s *staleStore) Get(ctx context.Context, key string) (store.Entry, error) {
	if c, ok := s.cache.Load(key); ok && time.Since(c.(staleEntry).at) < 100*time.Millisecond {
		return c.(staleEntry).e, nil
	}
	e, err := s.Store.Get(ctx, key)
	if err == nil {
		s.cache.Store(key, staleEntry{e, time.Now()})
	}
	return e, err
}

// linTimeout bounds porcupine's search per run; running out is the
// verdict Unknown (inconclusive), reported, not failed.
const linTimeout = 30 * time.Second

// fmtVerdicts counts verdicts by result: "{ok:2 illegal:0 unknown:0}"
// with the ops checked.
func fmtVerdicts(ls []Linearizability) string {
	n := map[porcupine.CheckResult]int{}
	ops, unknown := 0, 0
	for _, l := range ls {
		n[l.Result]++
		ops += l.Ops
		unknown += l.Unknown
	}
	return fmt.Sprintf("{ok:%d illegal:%d timed-out:%d over %d ops, %d of unknown outcome}", n[porcupine.Ok], n[porcupine.Illegal], n[porcupine.Unknown], ops, unknown)
}
