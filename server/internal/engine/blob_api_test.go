package engine_test

import (
	"bytes"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api"
)

// Through the S3 handler: a PutObject whose body is a blob and whose
// commit reports EIO after its record reached the file answers 500, and
// must not delete the blob: after reopen (with the server's orphan sweep)
// the object that did land reads back whole.
func TestFailedFsyncKeepsTheBlobOfAPutObject(t *testing.T) {
	dir := t.TempDir()
	opts := &engine.Options{NoSync: true, LiveBlobs: s3api.LiveBlobs}
	e, err := engine.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s3api.MustNew(e, &s3api.Options{Anonymous: true, Logger: quiet}))
	if st, b := send(t, "PUT", srv.URL+"/bkt", ""); st != 200 {
		t.Fatalf("create bucket: %d %s", st, b)
	}
	body := string(bytes.Repeat([]byte("blob body "), 10<<10)) // 100 KiB: a blob, not inline
	engine.SetSyncFault(e, syscall.EIO)
	if st, b := send(t, "PUT", srv.URL+"/bkt/obj", body); st != 500 {
		t.Fatalf("PutObject with a failing fsync: %d %.200s, want 500", st, b)
	}
	srv.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = engine.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv = httptest.NewServer(s3api.MustNew(e, &s3api.Options{Anonymous: true, Logger: quiet}))
	defer srv.Close()
	st, got := send(t, "GET", srv.URL+"/bkt/obj", "")
	if st != 200 || got != body {
		t.Fatalf("object whose record landed, after reopen: %d, %d bytes (want 200, %d bytes): %.200s", st, len(got), len(body), got)
	}
}
