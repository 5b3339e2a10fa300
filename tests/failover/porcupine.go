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
)

// The KV history of the workloads' keys (the fenced key and the counter
// keys) is recorded at the store's interface, every Get and Put with its
// call and return on the run's monotonic clock, and checked with
// porcupine against a sequential model of one register per key, the same
// model as storetest's linearizability subtests (mirrored here, since
// storetest keeps it unexported). A Put that failed with
// store.ErrUnknownOutcome may have happened, and may still happen: it is
// recorded with a return after every other event and an output marked
// unknown, which the model accepts whether or not it applied. A call that
// failed otherwise changed nothing (the store contract) and is left out,
// as is a read that failed.

// kvKind is the kind of a recorded call.
type kvKind uint8

const (
	kvGet kvKind = iota
	kvPut
)

// KVInput is one recorded call.
type KVInput struct {
	Kind  kvKind
	Key   string
	Value string
	Cond  store.Condition
}

// KVOutput is what the call returned.
type KVOutput struct {
	OK      bool // the put applied, or the get found the key
	Unknown bool // the put failed with ErrUnknownOutcome
	Value   string
	Version store.Version
}

type kvState struct {
	exists  bool
	value   string
	version store.Version
	// anyVersion: the key holds value under a version not yet observed
	// (written by a put of unknown outcome).
	anyVersion bool
}

// kvHolds says whether cond holds in s: yes, or maybe (an if-match
// against a version the model has not observed).
func kvHolds(cond store.Condition, s kvState) (yes, maybe bool) {
	if v, ok := cond.Match(); ok && s.exists && s.anyVersion {
		return false, v != ""
	}
	return cond.Holds(s.exists, s.version), false
}

// kvStep returns the states the register may be in after the call (none
// when its output is impossible in s).
func kvStep(state, input, output any) []any {
	s, in, out := state.(kvState), input.(KVInput), output.(KVOutput)
	if in.Kind == kvGet {
		switch {
		case !out.OK && !s.exists:
			return []any{s}
		case !out.OK || !s.exists || s.value != out.Value:
			return nil
		case s.anyVersion:
			return []any{kvState{exists: true, value: s.value, version: out.Version}}
		case s.version != out.Version:
			return nil
		}
		return []any{s}
	}
	yes, maybe := kvHolds(in.Cond, s)
	applied := kvState{exists: true, value: in.Value, version: out.Version, anyVersion: out.Unknown}
	switch {
	case out.Unknown && maybe:
		return []any{applied, s}
	case out.Unknown && yes:
		return []any{applied}
	case out.Unknown:
		return []any{s}
	case !out.OK && yes:
		return nil
	case !out.OK:
		return []any{s}
	case !yes && !maybe:
		return nil
	case s.exists && !s.anyVersion && out.Version == s.version:
		return nil // a write must return a new version
	}
	return []any{applied}
}

func short(v string) string {
	if len(v) > 24 {
		return "…" + v[len(v)-24:]
	}
	return v
}

// kvModel is one register per key.
var kvModel = (&porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range h {
			k := op.Input.(KVInput).Key
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{kvState{}} },
	Step: kvStep,
	DescribeOperation: func(input, output any) string {
		in, out := input.(KVInput), output.(KVOutput)
		switch {
		case in.Kind == kvGet && !out.OK:
			return fmt.Sprintf("get(%s) -> not found", in.Key)
		case in.Kind == kvGet:
			return fmt.Sprintf("get(%s) -> %s@%s", in.Key, short(out.Value), out.Version)
		case out.Unknown:
			return fmt.Sprintf("put(%s, %s, %s) -> unknown outcome", in.Key, short(in.Value), in.Cond)
		}
		return fmt.Sprintf("put(%s, %s, %s) -> ok=%v %s", in.Key, short(in.Value), in.Cond, out.OK, out.Version)
	},
	DescribeState: func(state any) string {
		s := state.(kvState)
		switch {
		case !s.exists:
			return "absent"
		case s.anyVersion:
			return short(s.value) + "@?"
		}
		return fmt.Sprintf("%s@%s", short(s.value), s.version)
	},
}).ToModel()

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
		keys[op.Input.(KVInput).Key] = true
		if op.Output.(KVOutput).Unknown {
			l.Unknown++
		}
	}
	l.Keys = len(keys)
	l.Result = porcupine.CheckOperationsTimeout(kvModel, ops, timeout)
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

func (r *kvRecorder) add(call int64, in KVInput, out KVOutput) {
	ret := int64(r.since())
	if out.Unknown {
		ret = never
	}
	r.log.mu.Lock()
	r.log.ops = append(r.log.ops, porcupine.Operation{Input: in, Call: call, Output: out, Return: ret})
	r.log.mu.Unlock()
}

func (r *kvRecorder) Get(ctx context.Context, key string) (store.Entry, error) {
	call := int64(r.since())
	e, err := r.Store.Get(ctx, key)
	if r.match(key) {
		switch {
		case err == nil:
			r.add(call, KVInput{Kind: kvGet, Key: key}, KVOutput{OK: true, Value: string(e.Value), Version: e.Version})
		case errors.Is(err, store.ErrNotFound):
			r.add(call, KVInput{Kind: kvGet, Key: key}, KVOutput{})
		}
	}
	return e, err
}

func (r *kvRecorder) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	call := int64(r.since())
	v, err := r.Store.Put(ctx, key, value, cond)
	if r.match(key) {
		in := KVInput{Kind: kvPut, Key: key, Value: string(value), Cond: cond}
		switch {
		case err == nil:
			r.add(call, in, KVOutput{OK: true, Version: v})
		case errors.Is(err, store.ErrUnknownOutcome):
			r.add(call, in, KVOutput{Unknown: true})
		case errors.Is(err, store.ErrConflict):
			r.add(call, in, KVOutput{})
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
