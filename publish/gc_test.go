package publish_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/publish/publishtest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// countingStreams is a store whose GetStream counts the bytes its readers
// deliver.
type countingStreams struct {
	store.Store
	read atomic.Int64
}

func (c *countingStreams) PutStream(ctx context.Context, key string, r io.Reader, cond store.Condition) (store.Version, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	return c.Put(ctx, key, b, cond)
}

func (c *countingStreams) GetStream(ctx context.Context, key string) (io.ReadCloser, store.Version, error) {
	e, err := c.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return io.NopCloser(&countingReader{r: bytes.NewReader(e.Value), n: &c.read}), e.Version, nil
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestGCReadsManifestHeads: GC learns each generation's successor link
// from the head of its manifest and does not read the file list, so its
// cost does not grow with the number of files.
func TestGCReadsManifestHeads(t *testing.T) {
	ctx := context.Background()
	cs := &countingStreams{Store: memstore.New()}
	w := publishtest.Begin(t, ctx, cs, "mh", nil)
	for i := range 2000 {
		publishtest.Put(t, ctx, w, fmt.Sprintf("some/fairly/long/directory/name/file-%04d.txt", i), "x")
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	big, err := cs.Get(ctx, "mh/gen/"+w.ID()+"/manifest")
	if err != nil {
		t.Fatal(err)
	}
	cs.read.Store(0)
	if _, err := publish.GC(ctx, cs, "mh", nil); err != nil {
		t.Fatal(err)
	}
	if n := cs.read.Load(); n == 0 || n > 16<<10 {
		t.Fatalf("GC read %d bytes of a %d-byte manifest; want its head only", n, len(big.Value))
	}
}
