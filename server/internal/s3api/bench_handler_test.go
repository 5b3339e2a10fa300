package s3api

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/latchkey/latchkey/server/internal/enginetest"
)

// BenchmarkHandlerGetPut measures the handler alone (no sockets, no
// client, a response writer that allocates nothing): one GET of a 4 KiB object, then one PUT replacing it with
// If-Match, the pair every CAS user runs. B/op and allocs/op are the
// server's cost per GET+PUT pair (the engine runs without fsync, so the
// figures are the request path's, not the disk's).
func BenchmarkHandlerGetPut(b *testing.B) {
	e := enginetest.Open(b)
	h := MustNew(e, &Options{Anonymous: true})
	w := &discardWriter{h: http.Header{}}
	do := func(method, target string, body []byte, hdr ...string) *discardWriter {
		r, err := http.NewRequest(method, "http://s3.test"+target, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header[hdr[i]] = []string{hdr[i+1]}
		}
		clear(w.h)
		w.code, w.n = 0, 0
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("PUT", "/bench", nil); w.code != http.StatusOK {
		b.Fatalf("create bucket: %d", w.code)
	}
	body := bytes.Repeat([]byte("x"), 4096)
	if w := do("PUT", "/bench/k", body); w.code != http.StatusOK {
		b.Fatalf("put: %d", w.code)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		g := do("GET", "/bench/k", nil)
		if g.code != http.StatusOK || g.n != int64(len(body)) {
			b.Fatalf("GET: %d, %d bytes", g.code, g.n)
		}
		if p := do("PUT", "/bench/k", body, "If-Match", g.h.Get("ETag")); p.code != http.StatusOK {
			b.Fatalf("PUT: %d", p.code)
		}
	}
}

// discardWriter is a ResponseWriter that counts the body and keeps the
// header map across requests (cleared by the caller).
type discardWriter struct {
	h    http.Header
	code int
	n    int64
}

func (w *discardWriter) Header() http.Header { return w.h }

func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += int64(len(p))
	return len(p), nil
}
