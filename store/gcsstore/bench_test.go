package gcsstore_test

import (
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storetest"
)

// BenchmarkStore runs the standard store benchmarks against
// fake-gcs-server (memory backend, same machine): they measure the
// client and HTTP path, not Google Cloud Storage, which also caps writes
// to one object near one per second.
//
//	LATCHKEY_TEST_GCS_EMULATOR=127.0.0.1:PORT go test -run '^$' -bench Store ./store/gcsstore/
func BenchmarkStore(b *testing.B) {
	e := startedEmulator(b)
	storetest.Bench(b, storetest.Harness{New: func(tb testing.TB) store.Store { return e.open(tb, "") }})
}
