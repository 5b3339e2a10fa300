package storetest

import (
	"github.com/anishathalye/porcupine"

	"github.com/latchkey/latchkey/store"
)

// KVModel is the porcupine model the Linearizability subtests check
// histories against, for harnesses that record histories of their own
// (tests/failover): one register per key, where a write of unknown
// outcome may or may not have happened, and may still happen. Build its
// operations' inputs and outputs with KVGet and KVPut.
var KVModel porcupine.Model = linModel

// KVGet is the input and output of a Get of key that found value at
// version v (found false: the key was not found).
func KVGet(key string, found bool, value string, v store.Version) (input, output any) {
	if !found {
		return linInput{kind: linGet, key: key}, linOutput{}
	}
	return linInput{kind: linGet, key: key}, linOutput{ok: true, value: value, version: v}
}

// KVPut is the input and output of a Put of value under cond: applied at
// version v, refused (applied and unknown false), or of unknown outcome.
func KVPut(key, value string, cond store.Condition, applied, unknown bool, v store.Version) (input, output any) {
	in := linInput{kind: linPut, key: key, value: value, cond: cond}
	switch {
	case unknown:
		return in, linOutput{unknown: true}
	case applied:
		return in, linOutput{ok: true, version: v}
	}
	return in, linOutput{}
}

// KVKey is the key of a KVModel operation's input; KVUnknown reports
// whether its output is of unknown outcome.
func KVKey(input any) string { return input.(linInput).key }

// KVUnknown reports whether a KVModel output is of unknown outcome.
func KVUnknown(output any) bool { return output.(linOutput).unknown }
