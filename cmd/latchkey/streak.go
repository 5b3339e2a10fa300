package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/latchkey/latchkey/store"
)

// streakStore watches the requests a command sends through it for
// streaks of store failures (failed requests in a row: unreachable,
// refused, unanswered), so the command can say when a streak starts, how
// many tries it lasted over how long, and when the store answered again,
// while the library retrying them (cas, lease) stays silent. A request
// the store answered (a value, a conflict, a missing key) ends a streak.
//
// It passes Txn and WaitChange through to the store when it has them, so
// callers that look for them behind Capabilities (lease) still find them;
// without them they fail with store.ErrUnsupported, which Capabilities
// has already ruled out.
type streakStore struct {
	store.Store
	// onStart, when set, is called with the first failure of a streak,
	// and onEnd with the count and span of a streak that ended with an
	// answer. They may be called from several goroutines at once.
	onStart func(err error)
	onEnd   func(n int, over time.Duration)

	mu    sync.Mutex
	n     int
	start time.Time // of the streak's first failure (monotonic)
	// news is the streak's last failure the store itself gave, and cut
	// whether a request our own side ended (ctx) came after it.
	news *store.OpError
	cut  bool
}

// isStoreFailure reports whether err is a failure of the store itself
// rather than its answer or our own giving up.
func isStoreFailure(err error) bool {
	return errors.Is(err, store.ErrTransient) || errors.Is(err, store.ErrUnknownOutcome)
}

// note records the outcome of one request sent with ctx.
func (s *streakStore) note(ctx context.Context, err error) {
	if ctx.Err() != nil {
		// Ended by our side: no news of the store.
		s.mu.Lock()
		s.cut = s.news != nil && err != nil
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	var start, end func()
	s.cut = false
	switch {
	case isStoreFailure(err):
		s.news = nil
		errors.As(err, &s.news)
		s.n++
		if s.n == 1 {
			s.start = time.Now()
			if s.onStart != nil {
				start = func() { s.onStart(err) }
			}
		}
	case s.n > 0:
		n, over := s.n, time.Since(s.start)
		s.n, s.news = 0, nil
		if s.onEnd != nil {
			end = func() { s.onEnd(n, over) }
		}
	}
	s.mu.Unlock()
	if start != nil {
		start()
	}
	if end != nil {
		end()
	}
}

// account is " after N tries over D" for the streak running, or "".
func (s *streakStore) account() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return ""
	}
	return tries(s.n, time.Since(s.start))
}

// lastAnswer is the store's last failing answer of the streak running
// when the request after it was ended by our own side (a deadline, an
// interrupt), and nil otherwise. Such a request is no news of the store,
// yet it is the one a library's final error carries: a command says this
// answer instead.
func (s *streakStore) lastAnswer() *store.OpError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cut || s.n == 0 {
		return nil
	}
	return s.news
}

// tries is " after N tries over D".
func tries(n int, over time.Duration) string {
	return fmt.Sprintf(" after %d tries over %v", n, roundDuration(over))
}

// roundDuration rounds d for a human: to 0.1s past a second, else to 1ms.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func (s *streakStore) Get(ctx context.Context, key string) (store.Entry, error) {
	e, err := s.Store.Get(ctx, key)
	s.note(ctx, err)
	return e, err
}

func (s *streakStore) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	v, err := s.Store.Put(ctx, key, value, cond)
	s.note(ctx, err)
	return v, err
}

func (s *streakStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	err := s.Store.Delete(ctx, key, cond)
	s.note(ctx, err)
	return err
}

func (s *streakStore) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	p, err := s.Store.List(ctx, prefix, opts)
	s.note(ctx, err)
	return p, err
}

// Txn is store.Transactor's, when the store has it.
func (s *streakStore) Txn(ctx context.Context, ops []store.TxnOp) ([]store.Version, error) {
	tx, ok := s.Store.(store.Transactor)
	if !ok {
		return nil, store.NewOpError("latchkey", "txn", "", store.ErrUnsupported, nil)
	}
	vs, err := tx.Txn(ctx, ops)
	s.note(ctx, err)
	return vs, err
}

// WaitChange is store.Watcher's, when the store has it.
func (s *streakStore) WaitChange(ctx context.Context, key string, last store.Version) error {
	w, ok := s.Store.(store.Watcher)
	if !ok {
		return store.NewOpError("latchkey", "watch", key, store.ErrUnsupported, nil)
	}
	err := w.WaitChange(ctx, key, last)
	s.note(ctx, err)
	return err
}
