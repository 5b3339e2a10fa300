package gcsstore_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store/gcsstore"
)

// emulatorEnv names the fake-gcs-server that .ci/run starts, as
// host:port or http://host:port.
const emulatorEnv = "LATCHKEY_TEST_GCS_EMULATOR"

// emulator is fake-gcs-server v1.56.1 (memory backend), the GCS peer.
type emulator struct {
	endpoint string // JSON API base URL
}

// startedEmulator returns the emulator .ci/run started. Outside CI a
// missing emulator skips the test with a message; with CI=true it fails it.
func startedEmulator(tb testing.TB) emulator {
	tb.Helper()
	addr := os.Getenv(emulatorEnv)
	if addr == "" {
		msg := emulatorEnv + " names a running fake-gcs-server (.ci/run starts one: fake-gcs-server -scheme http -host 127.0.0.1 -port PORT -backend memory -external-url http://127.0.0.1:PORT)"
		if os.Getenv("CI") == "true" {
			tb.Fatalf("CI=true but no GCS emulator: %s", msg)
		}
		tb.Skipf("no GCS emulator: %s", msg)
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return emulator{endpoint: strings.TrimSuffix(addr, "/") + "/storage/v1/"}
}

// bucket creates a fresh bucket on the emulator.
func (e emulator) bucket(tb testing.TB) string {
	tb.Helper()
	s, err := gcsstore.Open(context.Background(), &gcsstore.Options{Bucket: "placeholder", Endpoint: e.endpoint})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	name := testutil.RandomName("lk-test-")
	if err := s.Client().Bucket(name).Create(context.Background(), "latchkey-test", nil); err != nil {
		tb.Fatalf("fake-gcs-server at %s: create bucket %s: %v", e.endpoint, name, err)
	}
	return name
}

// open returns a store on a fresh bucket, with no prefix (a prefix would
// shorten the longest key below store.MaxKeyLen). fake-gcs-server ignores
// ifGenerationMatch on DELETE, so the store declares no CompareAndDelete.
func (e emulator) open(tb testing.TB, prefix string) *gcsstore.Store {
	tb.Helper()
	s, err := gcsstore.Open(context.Background(), &gcsstore.Options{
		Bucket: e.bucket(tb), Prefix: prefix, Endpoint: e.endpoint, NoCompareAndDelete: true,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
