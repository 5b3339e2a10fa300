package publish_test

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store/filestore"
)

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestStreamsWithoutBuffering: on a store with Streamer (the directory
// store), publishing and reading a 64 MiB object allocates far less than
// the object: memory does not grow with object size.
func TestStreamsWithoutBuffering(t *testing.T) {
	ctx := context.Background()
	s, err := filestore.Open(t.TempDir(), nil)
	testutil.Opened(t, s, err)
	const size = 64 << 20
	allocated := func(fn func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	w, err := publish.Begin(ctx, s, "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := allocated(func() {
		if err := w.Put(ctx, "blob", io.LimitReader(zeros{}, size)); err != nil {
			t.Fatal(err)
		}
	}); n > size/8 {
		t.Fatalf("Put of %d bytes allocated %d bytes: it buffers", size, n)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := publish.Open(ctx, s, "big")
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	if n := allocated(func() {
		rc, err := snap.Open(ctx, "blob")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if got, err = io.Copy(io.Discard, rc); err != nil {
			t.Fatal(err)
		}
	}); n > size/8 {
		t.Fatalf("reading %d bytes allocated %d bytes: it buffers", size, n)
	}
	if got != size {
		t.Fatalf("read %d bytes, want %d", got, size)
	}
}
