package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// The obligations of store.Streamer, run when the backend declares
// Capabilities.Streaming and implements the interface.

func hasStream(s store.Store) bool {
	_, ok := s.(store.Streamer)
	return ok && s.Capabilities().Streaming
}

func openStream(t *testing.T, h Harness) (context.Context, store.Store, store.Streamer) {
	t.Helper()
	return openAs[store.Streamer](t, h, "Streaming")
}

// pattern returns n deterministic bytes that differ per seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31+i>>9) ^ seed
	}
	return b
}

// streamSize is the size of streamed values: 1 MiB or MaxValueSize.
func (h Harness) streamSize() int {
	if h.MaxValueSize > 0 && h.MaxValueSize < 1<<20 {
		return h.MaxValueSize
	}
	return 1 << 20
}

// chunky hands out its bytes a few at a time, as a network body does.
type chunky struct {
	b []byte
}

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), 4093, len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// failingReader yields n bytes and then an error.
type failingReader struct{ n int }

var errReader = errors.New("storetest: reader failed")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errReader
	}
	n := min(len(p), f.n)
	clear(p[:n])
	f.n -= n
	return n, nil
}

func readStream(t *testing.T, ctx context.Context, st store.Streamer, key string) ([]byte, store.Version) {
	t.Helper()
	rc, v, err := st.GetStream(ctx, key)
	if err != nil {
		t.Fatalf("GetStream(%q): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("GetStream(%q): reading: %v", key, err)
	}
	return b, v
}

var streamTests = []subtest{
	{name: "PutStream value read to EOF round-trips through Get and GetStream", need: hasStream, run: func(t *testing.T, h Harness) {
		ctx, s, st := openStream(t, h)
		val := pattern(h.streamSize(), 1)
		v, err := st.PutStream(ctx, "big", &chunky{val}, store.Unconditional)
		if err != nil || v == "" {
			t.Fatalf("PutStream: %q, %v", v, err)
		}
		wantEntry(t, ctx, s, "big", val, v)
		got, gv := readStream(t, ctx, st, "big")
		if !bytes.Equal(got, val) || gv != v {
			t.Errorf("GetStream = %d bytes at %q (equal %v), want %d at %q", len(got), gv, bytes.Equal(got, val), len(val), v)
		}
		v0, err := st.PutStream(ctx, "empty", bytes.NewReader(nil), store.Unconditional)
		if err != nil {
			t.Fatalf("PutStream of an empty value: %v", err)
		}
		wantEntry(t, ctx, s, "empty", nil, v0)
	}},
	{name: "PutStream conditions behave as Put's", need: hasStream, run: func(t *testing.T, h Harness) {
		ctx, s, st := openStream(t, h)
		caps := s.Capabilities()
		v1 := put(t, ctx, s, "k", []byte("one"), store.Unconditional)
		v2 := put(t, ctx, s, "k", []byte("two"), store.Unconditional)
		if caps.CreateIfAbsent {
			_, err := st.PutStream(ctx, "k", bytes.NewReader([]byte("x")), store.IfAbsent)
			wantErr(t, "PutStream(IfAbsent) on an existing key", err, store.ErrConflict)
			vn, err := st.PutStream(ctx, "new", bytes.NewReader([]byte("n")), store.IfAbsent)
			if err != nil {
				t.Fatalf("PutStream(IfAbsent) on a missing key: %v", err)
			}
			wantEntry(t, ctx, s, "new", []byte("n"), vn)
		}
		if caps.CompareAndSwap {
			_, err := st.PutStream(ctx, "k", bytes.NewReader([]byte("x")), store.IfMatch(v1))
			wantErr(t, "PutStream(IfMatch stale)", err, store.ErrConflict)
			wantEntry(t, ctx, s, "k", []byte("two"), v2)
			v3, err := st.PutStream(ctx, "k", bytes.NewReader([]byte("three")), store.IfMatch(v2))
			if err != nil {
				t.Fatalf("PutStream(IfMatch current): %v", err)
			}
			if v3 == v2 || v3 == v1 {
				t.Errorf("PutStream returned an old version %q", v3)
			}
			wantEntry(t, ctx, s, "k", []byte("three"), v3)
		}
	}},
	{name: "a failed PutStream leaves nothing behind", need: hasStream, run: func(t *testing.T, h Harness) {
		ctx, s, st := openStream(t, h)
		v := put(t, ctx, s, "k", []byte("keep"), store.Unconditional)
		if _, err := st.PutStream(ctx, "k", &failingReader{n: 100 << 10}, store.Unconditional); err == nil {
			t.Errorf("PutStream with a failing reader succeeded")
		}
		if _, err := st.PutStream(ctx, "new", &failingReader{n: 10}, store.Unconditional); err == nil {
			t.Errorf("PutStream with a failing reader succeeded")
		}
		wantEntry(t, ctx, s, "k", []byte("keep"), v)
		wantMissing(t, ctx, s, "new")
		page, err := s.List(ctx, "", nil)
		if err != nil || len(page.Items) != 1 {
			t.Errorf("after failed streams List = %+v, %v; want only k", page.Items, err)
		}
	}},
	{name: "PutStream checks its condition when the value has been read whole", need: func(s store.Store) bool {
		return hasStream(s) && s.Capabilities().CompareAndSwap
	}, run: func(t *testing.T, h Harness) {
		ctx, s, st := openStream(t, h)
		v1 := put(t, ctx, s, "k", []byte("one"), store.Unconditional)
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := st.PutStream(ctx, "k", pr, store.IfMatch(v1))
			pr.CloseWithError(err) // unblock the writer if the stream gave up early
			done <- err
		}()
		if _, err := pw.Write(pattern(64<<10, 2)); err != nil {
			t.Fatalf("writing the stream's first half: %v", err)
		}
		// While the stream is in flight, another writer moves the key on.
		v2 := put(t, ctx, s, "k", []byte("two"), store.IfMatch(v1))
		pw.Write(pattern(64<<10, 3))
		pw.Close()
		err := <-done
		wantErr(t, "PutStream whose version was replaced mid-stream", err, store.ErrConflict)
		wantEntry(t, ctx, s, "k", []byte("two"), v2)
	}},
	{name: "GetStream yields exactly the bytes of the returned version", need: hasStream, run: func(t *testing.T, h Harness) {
		ctx, s, st := openStream(t, h)
		old := pattern(h.streamSize(), 4)
		v1, err := st.PutStream(ctx, "k", bytes.NewReader(old), store.Unconditional)
		if err != nil {
			t.Fatalf("PutStream: %v", err)
		}
		rc, gv, err := st.GetStream(ctx, "k")
		if err != nil {
			t.Fatalf("GetStream: %v", err)
		}
		defer rc.Close()
		head := make([]byte, 1000)
		if _, err := io.ReadFull(rc, head); err != nil {
			t.Fatalf("reading the stream's head: %v", err)
		}
		// Overwrite the key while the reader is half-way.
		put(t, ctx, s, "k", pattern(len(old), 5), store.Unconditional)
		rest, err := io.ReadAll(rc)
		if err != nil {
			t.Fatalf("reading the rest of the stream: %v", err)
		}
		if gv != v1 || !bytes.Equal(append(head, rest...), old) {
			t.Errorf("GetStream at %q (want %q) yielded bytes of another version after an overwrite", gv, v1)
		}
	}},
	{name: "GetStream of a missing key returns ErrNotFound", need: hasStream, run: func(t *testing.T, h Harness) {
		ctx, _, st := openStream(t, h)
		rc, _, err := st.GetStream(ctx, "missing")
		if rc != nil && err == nil {
			rc.Close()
		}
		wantErr(t, "GetStream of a missing key", err, store.ErrNotFound)
	}},
}
