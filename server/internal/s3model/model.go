package s3model

import (
	"context"
	"log/slog"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// Model is the S3 object model over one engine: every operation runs in
// its own engine transaction (View or Update) and removes the blobs it
// released once its Update committed. Create it with New; it is safe for
// concurrent use.
type Model struct {
	e   *engine.Engine
	log *slog.Logger

	// inflight tracks conditional writes between their start and their
	// commit (the 409 rule).
	inflight inflightKeys
	// keyID is the SSE master key's ID (UseMasterKey), recorded with the
	// first sealed body.
	keyID string
}

// New returns the model over e; log receives blob-removal failures (nil
// means slog.Default()).
func New(e *engine.Engine, log *slog.Logger) *Model {
	if log == nil {
		log = slog.Default()
	}
	return &Model{e: e, log: log}
}

// view runs fn over a read transaction.
func (m *Model) view(fn func(s *records) error) error {
	return m.e.View(func(tx *engine.Tx) error { return fn(&records{tx: tx}) })
}

// update runs fn in an engine Update. fn may run more than once (the
// engine retries a batch); it must reset what it reports.
func (m *Model) update(ctx context.Context, fn func(s *records) error) error {
	_, err := m.e.Update(ctx, func(tx *engine.Tx) error {
		return fn(&records{tx: tx, keep: m.inflight.holds, keyID: m.keyID})
	})
	return err
}

// updateDropping is update for a change that drops blobs: once the
// Update has committed, it removes the blobs that fn's last run dropped
// (no committed record references them any more). Nothing is removed when
// it fails.
func (m *Model) updateDropping(ctx context.Context, fn func(s *records) (dropped []string, err error)) error {
	var dropped []string
	err := m.update(ctx, func(s *records) error {
		var err error
		dropped, err = fn(s)
		return err
	})
	if err == nil {
		m.removeBlobs(dropped)
	}
	return err
}

// removeBlobs deletes blobs no committed record references any more. A
// failure leaves an orphan for the engine's sweep at the next Open.
func (m *Model) removeBlobs(ids []string) {
	for _, id := range ids {
		if err := m.e.RemoveBlob(id); err != nil {
			m.log.Warn("s3model: remove blob", "blob", id, "err", err)
		}
	}
}

// MutationRecord returns the key's last-mutation record (s3m) and whether
// it exists; a deleted key leaves none unless a conditional write was in
// flight on it.
func (m *Model) MutationRecord(bucket, key string) (index uint64, ok bool) {
	_ = m.view(func(s *records) error {
		if b := s.read(tblMod); b != nil {
			ok = b.Get(modKey(bucket, key)) != nil
		}
		index = s.mod(bucket, key)
		return nil
	})
	return index, ok
}
