package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
)

// lateAnswers is a store whose writes land at once but are answered only
// after delay, as over a slow network; a caller that gives up first gets
// an unknown outcome. started is closed when the first write has landed.
type lateAnswers struct {
	store.Store
	delay   time.Duration
	once    sync.Once
	started chan struct{}
}

func newLateAnswers(delay time.Duration) *lateAnswers {
	return &lateAnswers{delay: delay, started: make(chan struct{})}
}

func (s *lateAnswers) wrap(inner store.Store) store.Store {
	s.Store = inner
	return s
}

func (s *lateAnswers) answer(ctx context.Context, key string, err error) error {
	s.once.Do(func() { close(s.started) })
	select {
	case <-time.After(s.delay):
		return err
	case <-ctx.Done():
		return fmt.Errorf("late: write %q: %w (%w)", key, store.ErrUnknownOutcome, ctx.Err())
	}
}

func (s *lateAnswers) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	v, err := s.Store.Put(context.WithoutCancel(ctx), key, value, cond)
	if err := s.answer(ctx, key, err); err != nil {
		return "", err
	}
	return v, nil
}

func (s *lateAnswers) Delete(ctx context.Context, key string, cond store.Condition) error {
	return s.answer(ctx, key, s.Store.Delete(context.WithoutCancel(ctx), key, cond))
}

// interruptedWrite runs args against a store that lands the write at once
// and answers it after delay, with SIGTERM as soon as the write landed.
func interruptedWrite(t *testing.T, delay time.Duration, args ...string) (outcome, *cli) {
	c := newCLI(t)
	c.ok("kv", "put", "k", "before")
	late := newLateAnswers(delay)
	c.wrap, c.interrupt = late.wrap, late.started
	o := c.run(args...)
	c.wrap, c.interrupt = nil, nil
	return o, c
}

// SIGTERM while a write is in flight whose answer never comes in time:
// the write did land, so the command must not say "nothing written"; it
// says the write may or may not have applied, and exits exitUnknown.
func TestKVWriteInterruptedMayHaveApplied(t *testing.T) {
	t.Parallel() // waits out settleGrace
	for _, tc := range []struct {
		args []string
		want string // k afterwards: the write landed
	}{
		{[]string{"kv", "update", "k", "--", "sh", "-c", "cat >/dev/null; printf after"}, "after"},
		{[]string{"kv", "put", "k", "after"}, "after"},
	} {
		t.Run(tc.args[1], func(t *testing.T) {
			t.Parallel()
			o, c := interruptedWrite(t, time.Minute, tc.args...)
			if o.code != exitUnknown || !strings.Contains(o.stderr, "may or may not have applied") || strings.Contains(o.stderr, "nothing written") ||
				!strings.Contains(o.stderr, "interrupted by SIGTERM") || strings.Count(o.stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want %d, one line: interrupted by SIGTERM, may or may not have applied", o.code, o.stderr, exitUnknown)
			}
			if got := c.ok("kv", "get", "k"); got != tc.want {
				t.Errorf("k = %q; the write landed, want %q", got, tc.want)
			}
		})
	}
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		o, c := interruptedWrite(t, time.Minute, "kv", "delete", "k")
		if o.code != exitUnknown || !strings.Contains(o.stderr, "may or may not have applied") {
			t.Errorf("exit %d, stderr %q; want %d, may or may not have applied", o.code, o.stderr, exitUnknown)
		}
		c.fails(1, "no key exists", "kv", "get", "k")
	})
}

// SIGTERM while a write is in flight whose answer comes within the grace:
// the outcome is known, and reported as it is.
func TestKVWriteInterruptedSettlesWithinGrace(t *testing.T) {
	t.Parallel()
	o, c := interruptedWrite(t, 300*time.Millisecond, "kv", "update", "k", "--", "sh", "-c", "cat >/dev/null; printf after")
	if o.code != 0 || o.stdout != "Success! Data written to: k\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and Success: the write was answered within the grace", o.code, o.stdout, o.stderr)
	}
	if got := c.ok("kv", "get", "k"); got != "after" {
		t.Errorf("k = %q, want after", got)
	}
	o, _ = interruptedWrite(t, 300*time.Millisecond, "kv", "put", "-cas", "-modify-index=999", "k", "x")
	if o.code != 128+15 || !strings.Contains(o.stderr, "CAS failed") {
		t.Errorf("a CAS refused after SIGTERM: exit %d, stderr %q; want 143, CAS failed", o.code, o.stderr)
	}
}
