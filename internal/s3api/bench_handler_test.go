package s3api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/latchkey/latchkey/internal/engine"
)

// BenchmarkHandlerGetPut measures the handler alone (no sockets, no
// client): one GET of a 4 KiB object, then one PUT replacing it with
// If-Match, the pair every CAS user runs. B/op and allocs/op are the
// server's cost per GET+PUT pair (the engine runs without fsync, so the
// figures are the request path's, not the disk's).
func BenchmarkHandlerGetPut(b *testing.B) {
	e, err := engine.Open(b.TempDir(), &engine.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	h := MustNew(e, &Options{Anonymous: true})
	do := func(method, target string, body []byte, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, bytes.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("PUT", "/bench", nil); w.Code != http.StatusOK {
		b.Fatalf("create bucket: %d", w.Code)
	}
	body := bytes.Repeat([]byte("x"), 4096)
	if w := do("PUT", "/bench/k", body); w.Code != http.StatusOK {
		b.Fatalf("put: %d", w.Code)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		g := do("GET", "/bench/k", nil)
		if g.Code != http.StatusOK {
			b.Fatalf("GET: %d", g.Code)
		}
		if p := do("PUT", "/bench/k", body, "If-Match", g.Header().Get("ETag")); p.Code != http.StatusOK {
			b.Fatalf("PUT: %d %s", p.Code, p.Body)
		}
	}
}
