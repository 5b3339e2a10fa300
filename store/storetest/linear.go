package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latchkey/latchkey/store"
)

// The linearizability subtest records a history of concurrent get, put
// (unconditional, if-absent, if-match) and delete (unconditional,
// if-match) calls on a few keys and checks it with porcupine against a
// sequential model of one register per key. Versions are opaque, so the
// model's state is the (value, version) last observed: a successful put
// moves the register to the version the store returned, and a get must
// return exactly the register's value and version.

var linearTests = []subtest{
	{name: "concurrent get, put, cas and delete histories are linearizable", run: testLinearizable},
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
	value   string
	version store.Version
}

type linState struct {
	exists  bool
	value   string
	version store.Version
}

var linModel = porcupine.Model{
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
	Init: func() any { return linState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(linState), input.(linInput), output.(linOutput)
		switch in.kind {
		case linGet:
			if !out.ok {
				return !s.exists, s
			}
			return s.exists && s.value == out.value && s.version == out.version, s
		case linPut:
			holds := in.cond.Holds(s.exists, s.version)
			if !out.ok {
				return !holds, s
			}
			return holds && out.version != s.version, linState{exists: true, value: in.value, version: out.version}
		default: // linDelete
			holds := in.cond.Holds(s.exists, s.version)
			if !out.ok {
				return !holds, s
			}
			return holds, linState{}
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		switch in.kind {
		case linGet:
			if !out.ok {
				return fmt.Sprintf("get(%s) -> not found", in.key)
			}
			return fmt.Sprintf("get(%s) -> %s@%s", in.key, out.value, out.version)
		case linPut:
			return fmt.Sprintf("put(%s, %s, %s) -> ok=%v %s", in.key, in.value, in.cond, out.ok, out.version)
		default:
			return fmt.Sprintf("delete(%s, %s) -> ok=%v", in.key, in.cond, out.ok)
		}
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		if !s.exists {
			return "absent"
		}
		return fmt.Sprintf("%s@%s", s.value, s.version)
	},
}

// linCheckTimeout bounds porcupine's search; running out is logged, not
// failed.
const linCheckTimeout = 20 * time.Second

func testLinearizable(t *testing.T, h Harness) {
	base := seed()
	for round := range h.scaled(3, 1) {
		sd := base + int64(round)
		ctx, s := h.open(t)
		const clients = 4
		history, errs := linRecord(ctx, s, sd, clients, h.scaled(60, 20))
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
			t.Errorf("round %d (seed %d): history of %d ops is not linearizable%s", round, sd, len(history), where)
		case porcupine.Unknown:
			t.Logf("round %d (seed %d): linearizability check timed out after %v; inconclusive", round, sd, linCheckTimeout)
		default:
			t.Logf("round %d (seed %d): %d ops by %d clients are linearizable", round, sd, len(history), clients)
		}
	}
}

// linKeys are the keys the linearizability clients operate on.
var linKeys = []string{"lin/0", "lin/1", "lin/2"}

// linRecord runs clients concurrent clients of perClient random operations
// each on s, drawn from seed sd, and returns the history of the operations
// that returned, with their call and return times. A client stops at its
// first error, which is returned in errs.
func linRecord(ctx context.Context, s store.Store, sd int64, clients, perClient int) (history []porcupine.Operation, errs []error) {
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
	return history, errs
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
