package s3api

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// TestLiveBlobsSweep: with LiveBlobs as the engine's sweep callback, a
// reopen removes blobs no record names (a crash between blob commit and
// metadata commit) and keeps every referenced one: object versions and
// parts of uploads in progress.
func TestLiveBlobsSweep(t *testing.T) {
	dir := t.TempDir()
	open := func() (*engine.Engine, *testServer) {
		e, err := engine.Open(dir, &engine.Options{NoSync: true, LiveBlobs: LiveBlobs})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(MustNew(e, &Options{Anonymous: true, MinPartSize: 1}))
		return e, &testServer{t: t, e: e, srv: srv}
	}
	e, s := open()
	s.bucket("swp")
	big := strings.Repeat("b", inlineMax+1)
	s.put("/swp/obj", big)
	m := s.createMPU("/swp/mp")
	m.part(1, big)
	w, err := e.NewBlob()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("orphan"))
	if _, _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := countBlobs(t, s); n != 3 {
		t.Fatalf("%d blobs before reopen, want 3", n)
	}
	s.srv.Close()
	e.Close()

	e, s = open()
	defer func() { s.srv.Close(); e.Close() }()
	if n := countBlobs(t, s); n != 2 {
		t.Fatalf("%d blobs after reopen, want 2 (orphan swept)", n)
	}
	if g := s.mustDo(200, "GET", "/swp/obj", nil); string(g.Body) != big {
		t.Fatal("object body lost by the sweep")
	}
	m.s = s
	if r := m.complete(nil, 1); r.Status != 200 {
		t.Fatalf("complete after reopen: %d %s", r.Status, r.Body)
	}
}
