package engine

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Held is an engine whose first commit is held (see openHeld), for the
// external tests that drive the S3 and Consul handlers on it.
type Held = heldEngine

// OpenHeldFailing opens a held engine on which a commit fails once the
// file would outgrow maxSize (the fault hook of a full disk).
func OpenHeldFailing(t *testing.T, maxSize int) *Held {
	return openHeldIn(t, t.TempDir(), Options{NoSync: true, maxSize: maxSize})
}

// OpenHeldIn opens a held engine on dir with fsync on (a real disk's
// failures).
func OpenHeldIn(t *testing.T, dir string) *Held { return openHeldIn(t, dir, Options{}) }

// StartFirst starts the held first commit and waits until it is held.
func (h *heldEngine) StartFirst(t *testing.T, wg *sync.WaitGroup) { h.startFirst(t, wg) }

// Queued is the number of Updates queued behind the held commit.
func (h *heldEngine) Queued() int { return len(h.reqs) }

// Release lets the held commit finish once n Updates are queued.
func (h *heldEngine) Release(n int) { h.release(n) }

// PutLarge queues an Update writing a value of size bytes to key.
func (h *heldEngine) PutLarge(key string, size int) error {
	_, err := h.Update(context.Background(), func(tx *Tx) error {
		tx.PutRecord(Record{Key: key, Data: make([]byte, size)})
		return nil
	})
	return err
}

// SetSyncFault makes every later commit of e fail after its writes reached
// the file, as an fsync that reports EIO (see syncFault).
func SetSyncFault(e *Engine, err error) { e.syncFault = func() error { return err } }

// rawCodec is the tests' record format: Data is the value.
type rawCodec struct{}

func (rawCodec) Value(r Record) ([]byte, error) { return r.Data, nil }

func (rawCodec) Set(key string, _ Record, _ bool, value []byte) (Record, error) {
	return Record{Key: key, Data: value}, nil
}

// getRec is GetRecord for tests, whose records are never corrupt.
func getRec(tx *Tx, key string) (Record, bool) {
	r, ok, err := tx.GetRecord(key)
	if err != nil {
		panic(err)
	}
	return r, ok
}

// listRecs is ListRecords for tests.
func listRecs(tx *Tx, prefix, after string, limit int) []Record {
	rs, err := tx.ListRecords(prefix, after, limit)
	if err != nil {
		panic(err)
	}
	return rs
}

// awaitWaiters returns once n prefixes have waiters registered on e, or
// fails t after 10s.
func awaitWaiters(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.watch.mu.Lock()
		got := len(e.watch.byPfx)
		e.watch.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d waiters registered", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// viewSees starts a View that reports whether it sees key; it blocks
// while a commit it would show is not yet durable.
func viewSees(e *Engine, key string) <-chan bool {
	saw := make(chan bool, 1)
	go e.View(func(tx *Tx) error {
		_, ok := getRec(tx, key)
		saw <- ok
		return nil
	})
	return saw
}
