package consulapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// block runs a read as a Consul blocking query. run reads inside
// a snapshot and returns the result's index; it must reset whatever it
// captures, because it runs once per wake.
//
// With qo.index 0 the read runs once. Otherwise it runs until its index is
// strictly greater than qo.index, qo.wait has passed or StopBlocking is
// called; on timeout or stop the current state is returned like any other
// answer. Between runs it waits
// on the engine with wait (kvWait or touchWait), so there is no polling; a
// wake for a neighbour with the same prefix just re-runs the read.
func (h *Handler) block(ctx context.Context, qo queryOptions, wait waitFunc, run func(tx *engine.Tx) (uint64, error)) (uint64, error) {
	if qo.index > 0 {
		select {
		case h.blocking <- struct{}{}:
			defer func() { <-h.blocking }()
		default:
			return 0, errorf(http.StatusTooManyRequests, "Too many blocking queries (limit %d)", h.opts.MaxBlockingQueries)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, qo.wait)
		defer cancel()
		defer context.AfterFunc(h.stopping, cancel)()
	}
	for {
		var idx, snap uint64
		err := h.e.View(func(tx *engine.Tx) error {
			if qo.index > 0 { // only a blocking query waits after it
				snap = tx.Index()
			}
			var err error
			idx, err = run(tx)
			return err
		})
		if err != nil || qo.index == 0 || idx > qo.index {
			return idx, err
		}
		werr := wait.wait(ctx, snap)
		switch {
		case werr == nil:
			continue
		case errors.Is(werr, context.Canceled) || errors.Is(werr, context.DeadlineExceeded):
			// Our own timeout: answer with the current state. The
			// client going away: the answer is discarded anyway.
			return h.readOnce(run)
		default:
			return 0, werr
		}
	}
}

// waitFunc is what a blocking query waits for: kvWait or touchWait. It
// is a value, not a closure, so that a read that does not block (nearly
// every one) allocates nothing for it.
type waitFunc struct {
	e       *engine.Engine
	prefix  string
	touched bool
}

// wait waits for a commit after the given index that concerns the query.
func (w waitFunc) wait(ctx context.Context, after uint64) error {
	if w.touched {
		return w.e.WaitTouched(ctx, w.prefix, after)
	}
	return w.e.Wait(ctx, w.prefix, after)
}

// kvWait waits for a write or delete of a KV key under prefix: only KV
// keys, so S3 and session writes never wake a KV query, not even one on
// the whole root.
func (h *Handler) kvWait(prefix string) waitFunc { return waitFunc{e: h.e, prefix: prefix} }

// touchWait waits for a Touch of a name under prefix (sessions).
func (h *Handler) touchWait(prefix string) waitFunc {
	return waitFunc{e: h.e, prefix: prefix, touched: true}
}

func (h *Handler) readOnce(run func(tx *engine.Tx) (uint64, error)) (uint64, error) {
	var idx uint64
	err := h.e.View(func(tx *engine.Tx) error {
		var err error
		idx, err = run(tx)
		return err
	})
	return idx, err
}
