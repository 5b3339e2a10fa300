package storetest

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/memstore"
)

// The model counts a write of unknown outcome as one that may have
// happened at any time after its call, once, and nothing more.
func TestLinearModelOfUnknownOutcomes(t *testing.T) {
	put := func(value string, cond store.Condition) linInput {
		return linInput{kind: linPut, key: "k", value: value, cond: cond}
	}
	get := linInput{kind: linGet, key: "k"}
	unknown := linOutput{unknown: true}
	found := func(value string, v store.Version) linOutput {
		return linOutput{ok: true, value: value, version: v}
	}
	op := func(client int, in linInput, call int64, out linOutput, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	const never = math.MaxInt64
	cases := []struct {
		name    string
		history []porcupine.Operation
		want    bool // linearizable
	}{
		{"an unknown write that never applied", []porcupine.Operation{
			op(0, put("a", store.IfAbsent), 0, unknown, never),
			op(1, get, 10, linOutput{}, 11),
		}, true},
		{"an unknown write that applied after a read saw it absent", []porcupine.Operation{
			op(0, put("a", store.IfAbsent), 0, unknown, never),
			op(1, get, 10, linOutput{}, 11),
			op(1, get, 20, found("a", "v1"), 21),
		}, true},
		{"an unknown write on a version not yet seen, then a swap on it", []porcupine.Operation{
			op(0, put("a", store.IfAbsent), 0, unknown, never),
			op(1, get, 10, found("a", "v1"), 11),
			op(1, put("b", store.IfMatch("v1")), 20, linOutput{ok: true, version: "v2"}, 21),
			op(1, get, 30, found("b", "v2"), 31),
		}, true},
		{"an unknown write seen twice around another write", []porcupine.Operation{
			op(0, put("a", store.Unconditional), 0, unknown, never),
			op(1, get, 10, found("a", "v1"), 11),
			op(1, put("b", store.Unconditional), 20, linOutput{ok: true, version: "v2"}, 21),
			op(1, get, 30, found("a", "v3"), 31),
		}, false},
		{"an unknown write applied although its condition failed", []porcupine.Operation{
			op(1, put("b", store.IfAbsent), 0, linOutput{ok: true, version: "v1"}, 1),
			op(0, put("a", store.IfAbsent), 10, unknown, never),
			op(1, get, 20, found("a", "v2"), 21),
		}, false},
		{"a write seen before its call", []porcupine.Operation{
			op(1, get, 0, found("a", "v1"), 1),
			op(0, put("a", store.IfAbsent), 10, unknown, never),
		}, false},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(linModel, c.history); got != c.want {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.want)
		}
	}
}

// An operation that failed with ErrTransient did not happen, by the
// contract: the recorder leaves it out instead of failing the history
// (S3's 409 ConditionalRequestConflict on a conditional write that raced
// another made TestConformanceLatchkey fail in CI).
func TestLinearRecordLeavesOutTransientFailures(t *testing.T) {
	fs := faultstore.New(memstore.New(), 1)
	defer fs.Close()
	fs.Inject(faultstore.Rule{Ops: faultstore.OpPut | faultstore.OpDelete, Err: store.ErrTransient, Prob: 0.2})
	history, _, errs := linRecord(t.Context(), fs, 1, 4, 40)
	for _, err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	if fs.Injected() == 0 {
		t.Fatal("no transient failure was injected; the test checked nothing")
	}
	if res := porcupine.CheckOperations(linModel, history); !res {
		t.Errorf("history without the transient failures is not linearizable")
	}
}
