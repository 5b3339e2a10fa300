package gcsstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
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

// bucket creates a fresh bucket on the emulator (JSON API buckets.insert).
func (e emulator) bucket(tb testing.TB) string {
	tb.Helper()
	name := testutil.RandomName("lk-test-")
	body, _ := json.Marshal(map[string]string{"name": name})
	resp, err := http.Post(e.endpoint+"b?project=latchkey-test", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("fake-gcs-server at %s: create bucket %s: %v", e.endpoint, name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("fake-gcs-server at %s: create bucket %s: %s", e.endpoint, name, resp.Status)
	}
	return name
}

// metadata reads an object's custom metadata (JSON API objects.get).
func (e emulator) metadata(tb testing.TB, bucket, object string) map[string]string {
	tb.Helper()
	resp, err := http.Get(e.endpoint + "b/" + bucket + "/o/" + url.PathEscape(object))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var o struct {
		Metadata map[string]string `json:"metadata"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&o) != nil {
		tb.Fatalf("object %s/%s: %s", bucket, object, resp.Status)
	}
	return o.Metadata
}

// open returns a store on a fresh bucket, with no prefix (a prefix would
// shorten the longest key below store.MaxKeyLen). fake-gcs-server ignores
// ifGenerationMatch on DELETE, so the store declares no CompareAndDelete.
func (e emulator) open(tb testing.TB, prefix string) *gcsstore.Store {
	tb.Helper()
	s, err := gcsstore.Open(context.Background(), &gcsstore.Options{
		Bucket: e.bucket(tb), Prefix: prefix, Endpoint: e.endpoint, NoCompareAndDelete: true,
	})
	testutil.Opened(tb, s, err)
	return s
}
