package storetest_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/store/storetest"
)

// plainStore declares only what a plain object store without conditional
// writes has, and refuses conditions it does not declare. It hides
// memstore's Txn and WaitChange by embedding the interface only.
type plainStore struct {
	store.Store
	lie bool // ignore conditions silently instead of refusing them
}

func (s plainStore) Capabilities() store.Capabilities { return store.Capabilities{} }

func (s plainStore) Put(ctx context.Context, key string, v []byte, c store.Condition) (store.Version, error) {
	if !c.IsUnconditional() {
		if !s.lie {
			return "", store.NewOpError("plain", "put", key, store.ErrUnsupported, nil)
		}
		c = store.Unconditional
	}
	return s.Store.Put(ctx, key, v, c)
}

func (s plainStore) Delete(ctx context.Context, key string, c store.Condition) error {
	if !c.IsUnconditional() {
		if !s.lie || c.IsAbsent() {
			return store.NewOpError("plain", "delete", key, store.ErrUnsupported, nil)
		}
		c = store.Unconditional
	}
	return s.Store.Delete(ctx, key, c)
}

// A backend that declares no conditional writes and refuses them passes:
// the suite checks the refusals instead of the races. The knobs shrink
// the run as a slow remote backend would.
func TestRunOnAStoreWithoutConditionalWrites(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(tb testing.TB) store.Store {
			s := plainStore{Store: memstore.New()}
			tb.Cleanup(func() { s.Close() })
			return s
		},
		Scale:        0.25,
		MaxValueSize: 512 << 10,
	})
}

func init() {
	brokenStores["ignores-conditions"] = brokenStore{
		func() store.Store { return plainStore{Store: memstore.New(), lie: true} }, "Capabilities",
		"Capabilities/undeclared_CompareAndSwap_returns_ErrUnsupported",
	}
}

// bufferedStreams gives memstore the Streamer interface by reading values
// whole and writing them with Put once read: the condition is checked at
// publication, as the contract asks.
type bufferedStreams struct{ *memstore.Store }

func (s bufferedStreams) Capabilities() store.Capabilities {
	c := s.Store.Capabilities()
	c.Streaming = true
	return c
}

func (s bufferedStreams) PutStream(ctx context.Context, key string, r io.Reader, c store.Condition) (store.Version, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", store.NewOpError("buffered", "put", key, store.ErrTransient, err)
	}
	return s.Put(ctx, key, b, c)
}

func (s bufferedStreams) GetStream(ctx context.Context, key string) (io.ReadCloser, store.Version, error) {
	e, err := s.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return io.NopCloser(bytes.NewReader(e.Value)), e.Version, nil
}

func TestRunOnAStreamer(t *testing.T) {
	storetest.Run(t, storetest.Harness{New: func(tb testing.TB) store.Store {
		s := bufferedStreams{memstore.New()}
		tb.Cleanup(func() { s.Close() })
		return s
	}})
}

// earlyCheck checks a stream's condition before reading it, so a write
// that lands mid-stream is overwritten.
type earlyCheck struct{ bufferedStreams }

func (s earlyCheck) PutStream(ctx context.Context, key string, r io.Reader, c store.Condition) (store.Version, error) {
	e, err := s.Get(ctx, key)
	if !c.Holds(err == nil, e.Version) {
		return "", store.NewOpError("early", "put", key, store.ErrConflict, nil)
	}
	return s.bufferedStreams.PutStream(ctx, key, r, store.Unconditional)
}

func init() {
	brokenStores["stream-checks-early"] = brokenStore{
		func() store.Store { return earlyCheck{bufferedStreams{memstore.New()}} }, "Stream",
		"Stream/PutStream_checks_its_condition_when_the_value_has_been_read_whole",
	}
}
