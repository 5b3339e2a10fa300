package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
)

// The linearizability subtests record a history of concurrent get, put
// (unconditional, if-absent, if-match) and delete (unconditional,
// if-match) calls on a few keys and check it with porcupine against a
// sequential model of one register per key. Versions are opaque, so the
// model's state is the (value, version) last observed: a successful put
// moves the register to the version the store returned, and a get must
// return exactly the register's value and version.
//
// A write that fails with store.ErrUnknownOutcome may have happened, and
// may still happen after its caller gave up on it. It is recorded the way
// porcupine histories record a timed-out call: with a return time after
// every other event (it may take effect at any point after its call) and an
// output marked unknown, which the model accepts whether or not the write
// applied. If it never applied, porcupine places it after everything else,
// where it changes nothing anyone saw. An applied write of unknown outcome
// leaves the register's version unknown until a get shows it. A store
// whose unknown writes land twice, or land after being refused, cannot be
// explained by any such placement and fails.

var linearTests = []subtest{
	{name: "concurrent get, put, cas and delete histories are linearizable", run: func(t *testing.T, h Harness) {
		testLinearizable(t, h, h.scaled(3, 1), nil)
	}},
	{name: "histories with writes of unknown outcome are linearizable when those may have happened", run: func(t *testing.T, h Harness) {
		var fs *faultstore.Store
		testLinearizable(t, h, h.scaled(2, 1), func(s store.Store) store.Store {
			fs = faultstore.New(s, uint64(seed()))
			// The first write always lands and reports an unknown outcome,
			// so a short run (Scale) cannot draw no fault at all; the
			// probabilistic rules add the rest.
			fs.Inject(faultstore.Rule{Ops: faultstore.OpPut | faultstore.OpDelete, Fault: faultstore.ApplyThenFail, Count: 1})
			fs.Inject(faultstore.Rule{Ops: faultstore.OpPut | faultstore.OpDelete, Fault: faultstore.ApplyThenFail, Prob: 0.07})
			fs.Inject(faultstore.Rule{Ops: faultstore.OpPut | faultstore.OpDelete, Err: store.ErrUnknownOutcome, Prob: 0.07})
			return fs
		})
		if fs != nil && fs.Injected() == 0 {
			t.Errorf("no unknown outcome was injected; the subtest checked nothing new")
		}
	}},
}

type linKind uint8

const (
	linGet linKind = iota
	linPut
	linDelete
)

type linInput struct {
	kind  linKind
	key   string
	value string
	cond  store.Condition
}

type linOutput struct {
	ok      bool // the write applied, or the get found the key
	unknown bool // the write failed with ErrUnknownOutcome
	value   string
	version store.Version
}

type linState struct {
	exists  bool
	value   string
	version store.Version
	// anyVersion: the key holds value under a version not yet observed
	// (written by a write of unknown outcome).
	anyVersion bool
}

// linHolds says whether cond holds in s: yes, or maybe (an if-match
// against a version the model has not observed).
func linHolds(cond store.Condition, s linState) (yes, maybe bool) {
	if v, ok := cond.Match(); ok && s.exists && s.anyVersion {
		return false, v != ""
	}
	return cond.Holds(s.exists, s.version), false
}

// linStep returns the states the register may be in after the operation
// (none when the output is impossible in s).
func linStep(state, input, output any) []any {
	s, in, out := state.(linState), input.(linInput), output.(linOutput)
	if in.kind == linGet {
		switch {
		case !out.ok && !s.exists:
			return []any{s}
		case !out.ok || !s.exists || s.value != out.value:
			return nil
		case s.anyVersion:
			return []any{linState{exists: true, value: s.value, version: out.version}}
		case s.version != out.version:
			return nil
		}
		return []any{s}
	}
	yes, maybe := linHolds(in.cond, s)
	applied := linState{}
	if in.kind == linPut {
		applied = linState{exists: true, value: in.value, version: out.version, anyVersion: out.unknown}
	}
	switch {
	case out.unknown && maybe:
		return []any{applied, s}
	case out.unknown && yes:
		return []any{applied}
	case out.unknown:
		return []any{s}
	case !out.ok && yes:
		return nil
	case !out.ok:
		return []any{s}
	case !yes && !maybe:
		return nil
	case in.kind == linPut && s.exists && !s.anyVersion && out.version == s.version:
		return nil // a write must return a new version
	}
	return []any{applied}
}

var linModel = (&porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range h {
			k := op.Input.(linInput).key
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
	Init: func() []any { return []any{linState{}} },
	Step: linStep,
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		switch {
		case in.kind == linGet && !out.ok:
			return fmt.Sprintf("get(%s) -> not found", in.key)
		case in.kind == linGet:
			return fmt.Sprintf("get(%s) -> %s@%s", in.key, out.value, out.version)
		case out.unknown && in.kind == linPut:
			return fmt.Sprintf("put(%s, %s, %s) -> unknown outcome", in.key, in.value, in.cond)
		case in.kind == linPut:
			return fmt.Sprintf("put(%s, %s, %s) -> ok=%v %s", in.key, in.value, in.cond, out.ok, out.version)
		case out.unknown:
			return fmt.Sprintf("delete(%s, %s) -> unknown outcome", in.key, in.cond)
		}
		return fmt.Sprintf("delete(%s, %s) -> ok=%v", in.key, in.cond, out.ok)
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		switch {
		case !s.exists:
			return "absent"
		case s.anyVersion:
			return s.value + "@?"
		}
		return fmt.Sprintf("%s@%s", s.value, s.version)
	},
}).ToModel()

// linCheckTimeout bounds porcupine's search; running out is logged, not
// failed.
const linCheckTimeout = 20 * time.Second

// testLinearizable records and checks rounds histories, each on a fresh
// store, wrapped by wrap when it is not nil.
func testLinearizable(t *testing.T, h Harness, rounds int, wrap func(store.Store) store.Store) {
	base := seed()
	for round := range rounds {
		sd := base + int64(round)
		ctx, s := h.open(t)
		if wrap != nil {
			s = wrap(s)
		}
		const clients = 4
		history, unknown, errs := linRecord(ctx, s, sd, clients, h.scaled(60, 20))
		if len(errs) > 0 {
			for _, err := range errs {
				t.Errorf("round %d (seed %d): unexpected error: %v", round, sd, err)
			}
			return
		}
		res, info := porcupine.CheckOperationsVerbose(linModel, history, linCheckTimeout)
		switch res {
		case porcupine.Illegal:
			// With -artifacts the visualization outlives the test.
			path := filepath.Join(t.ArtifactDir(), fmt.Sprintf("linearizability-%d.html", round))
			where := ""
			if porcupine.VisualizePath(linModel, info, path) == nil {
				where = "; visualization in " + path + " (keep it with go test -artifacts)"
			}
			t.Errorf("round %d (seed %d): history of %d ops (%d of unknown outcome) is not linearizable%s", round, sd, len(history), unknown, where)
		case porcupine.Unknown:
			t.Logf("round %d (seed %d): linearizability check timed out after %v; inconclusive", round, sd, linCheckTimeout)
		default:
			t.Logf("round %d (seed %d): %d ops (%d of unknown outcome) by %d clients are linearizable", round, sd, len(history), unknown, clients)
		}
	}
}

// linKeys are the keys the linearizability clients operate on.
var linKeys = []string{"lin/0", "lin/1", "lin/2"}

// linRecord runs clients concurrent clients of perClient random operations
// each on s, drawn from seed sd, and returns the history of the operations
// that returned, with their call and return times, and how many of them
// were writes of unknown outcome. Those get a return time after every
// other event. A read of unknown outcome and an operation that failed with
// ErrTransient changed nothing and are left out. A client stops at its
// first other error, which is returned in errs.
func linRecord(ctx context.Context, s store.Store, sd int64, clients, perClient int) (history []porcupine.Operation, unknown int, errs []error) {
	caps := s.Capabilities()
	var mu sync.Mutex
	start := time.Now()
	race(clients, func(c int) struct{} {
		rng := rand.New(rand.NewPCG(uint64(sd), uint64(c)))
		seen := map[string]store.Version{}
		for i := range perClient {
			in := linRandomInput(rng, caps, seen, fmt.Sprintf("c%d.%d", c, i))
			call := time.Since(start).Nanoseconds()
			out, err := linDo(ctx, s, in)
			ret := time.Since(start).Nanoseconds()
			if errors.Is(err, store.ErrTransient) && ctx.Err() == nil {
				// By the contract the operation did not happen (S3's 409
				// ConditionalRequestConflict when a conditional write races
				// another): it changed nothing and is left out.
				continue
			}
			if errors.Is(err, store.ErrUnknownOutcome) && ctx.Err() == nil {
				if in.kind == linGet {
					continue
				}
				out, err, ret = linOutput{unknown: true}, nil, math.MaxInt64
			}
			mu.Lock()
			if err != nil {
				errs = append(errs, fmt.Errorf("client %d op %d %+v: %w", c, i, in, err))
			} else {
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
			}
			mu.Unlock()
			if err != nil {
				return struct{}{}
			}
			if out.version != "" {
				seen[in.key] = out.version
			}
		}
		return struct{}{}
	})
	// "After every other event": one past the last, which keeps the
	// visualization readable where math.MaxInt64 would not.
	var last int64
	for _, op := range history {
		last = max(last, op.Call)
		if op.Return != math.MaxInt64 {
			last = max(last, op.Return)
		}
	}
	for i := range history {
		if history[i].Return == math.MaxInt64 {
			history[i].Return = last + 1
			unknown++
		}
	}
	return history, unknown, errs
}

// linRandomInput draws one operation: 35% get, 50% put of value, 15%
// delete, on a random key, with a condition the backend declares (seen
// holds the version this client last saw of each key).
func linRandomInput(rng *rand.Rand, caps store.Capabilities, seen map[string]store.Version, value string) linInput {
	key := linKeys[rng.IntN(len(linKeys))]
	in := linInput{key: key}
	switch x := rng.IntN(20); {
	case x < 7:
		in.kind = linGet
	case x < 17:
		in.kind, in.value = linPut, value
		in.cond = linCond(rng, caps.CreateIfAbsent, caps.CompareAndSwap, seen[key])
	default:
		in.kind = linDelete
		in.cond = linCond(rng, false, caps.CompareAndDelete, seen[key])
	}
	return in
}

// linCond picks a condition: if-match on the version this client last saw
// (sometimes the empty version), if-absent, or unconditional.
func linCond(rng *rand.Rand, absent, match bool, seen store.Version) store.Condition {
	switch x := rng.IntN(10); {
	case x < 5 && match:
		return store.IfMatch(seen)
	case x < 8 && absent:
		return store.IfAbsent
	}
	return store.Unconditional
}

// linDo performs one operation; a condition that did not hold is an
// output (ok false), any other failure an error.
func linDo(ctx context.Context, s store.Store, in linInput) (linOutput, error) {
	switch in.kind {
	case linGet:
		e, err := s.Get(ctx, in.key)
		if errors.Is(err, store.ErrNotFound) {
			return linOutput{}, nil
		}
		if err != nil {
			return linOutput{}, err
		}
		return linOutput{ok: true, value: string(e.Value), version: e.Version}, nil
	case linPut:
		v, err := s.Put(ctx, in.key, []byte(in.value), in.cond)
		if errors.Is(err, store.ErrConflict) {
			return linOutput{}, nil
		}
		if err != nil {
			return linOutput{}, err
		}
		return linOutput{ok: true, version: v}, nil
	default:
		err := s.Delete(ctx, in.key, in.cond)
		if errors.Is(err, store.ErrConflict) {
			return linOutput{}, nil
		}
		if err != nil {
			return linOutput{}, err
		}
		return linOutput{ok: true}, nil
	}
}
