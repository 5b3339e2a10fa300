package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/internal/console"
	"github.com/latchkey/latchkey/server/internal/consulmodel"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// benchEngine is an engine with n keys: n/100 folders of 100 keys each
// under "data/", and every 10th key a lease record (under "locks/").
func benchEngine(b *testing.B, n int) *engine.Engine {
	b.Helper()
	e, err := engine.Open(b.TempDir(), &engine.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	rec, _ := json.Marshal(map[string]any{"holder": "w@h", "nonce": "n", "token": 1, "ttl_ms": 15000,
		"renewed": time.Now().UTC(), "acquired": time.Now().UTC()})
	const batch = 5000
	for i := 0; i < n; i += batch {
		if _, err := e.Update(context.Background(), func(tx *engine.Tx) error {
			for j := i; j < min(i+batch, n); j++ {
				if j%10 == 0 {
					consulmodel.Put(tx, consulmodel.KV{Key: fmt.Sprintf("locks/%06d", j), Value: rec})
				} else {
					consulmodel.Put(tx, consulmodel.KV{Key: fmt.Sprintf("data/%04d/%06d", j/100, j), Value: []byte("value")})
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// BenchmarkPage100k renders each listing page over a store of 100k keys:
// the time of one whole request, template included.
func BenchmarkPage100k(b *testing.B) {
	e := benchEngine(b, 100_000)
	h, err := console.New(&console.Options{Engine: e})
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{
		"/ui/", "/ui/kv", "/ui/kv?prefix=data/", "/ui/kv?prefix=data/0500/",
		"/ui/locks?prefix=locks/", "/ui/publications", "/-/api/kv?prefix=data/",
	} {
		name := strings.NewReplacer("/", "_", "?", "_").Replace(path)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d", path, w.Code)
				}
			}
		})
	}
}
