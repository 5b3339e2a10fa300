package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/latchkey/latchkey/store"
)

// settleGrace is how long a write already sent may still take to be
// answered once its command was interrupted (SIGINT, SIGTERM, --timeout):
// cutting it off at once would turn a write that landed into one whose
// outcome nobody knows. Past it, the command says the write may or may
// not have applied, and exits exitUnknown.
const settleGrace = 3 * time.Second

// settleCtx returns the context to send one write with: ctx's values and,
// once ctx ends, settleGrace more. The caller must call cancel.
func settleCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(settleGrace, cancel) })
	return wctx, func() { stop(); cancel() }
}

// mayHaveApplied reports whether a write that failed with err may have
// applied all the same: its outcome is unknown, or it was cut off while
// in flight.
func mayHaveApplied(err error) bool {
	return errors.Is(err, store.ErrUnknownOutcome) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// unknownWrite is the error of a command whose write (what, "writing
// KEY") may or may not have applied: exit exitUnknown, one line saying so
// and why, the advice to look (check), and err's raw text for --verbose.
func unknownWrite(ctx context.Context, cmd, what, check string, err error) error {
	why := "no answer from the store while " + what
	var oe *store.OpError
	if ctx.Err() != nil {
		why = fmt.Sprintf("%v while %s, before the store answered", ctx.Err(), what)
	} else if errors.As(err, &oe) && troubleOf(oe).what != "" {
		why = troubleOf(oe).brief() + " while " + what
	}
	return &exitError{code: exitUnknown, cause: identifierWords.Replace(err.Error()),
		msg: identifierWords.Replace(fmt.Sprintf("%s: %s: %s; check with `%s`", cmd, outcomeUnknown, why, check))}
}

// settlingStore gives each Put and Delete settleCtx's grace, and remembers
// whether a write ended without a known outcome, for commands that write
// through a library call (cas.Update). A write asked for after ctx ended
// is not sent.
type settlingStore struct {
	store.Store
	mu      sync.Mutex
	unknown bool // a write ended and may have applied unseen
}

func (s *settlingStore) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	wctx, cancel := settleCtx(ctx)
	defer cancel()
	v, err := s.Store.Put(wctx, key, value, cond)
	s.note(err)
	return v, err
}

func (s *settlingStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	wctx, cancel := settleCtx(ctx)
	defer cancel()
	err := s.Store.Delete(wctx, key, cond)
	s.note(err)
	return err
}

// note records the outcome of a write: a later write with a known outcome
// does not undo an earlier unknown one (it may still land).
func (s *settlingStore) note(err error) {
	if mayHaveApplied(err) {
		s.mu.Lock()
		s.unknown = true
		s.mu.Unlock()
	}
}

// mayHaveWritten reports whether a write may have applied unseen.
func (s *settlingStore) mayHaveWritten() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unknown
}
