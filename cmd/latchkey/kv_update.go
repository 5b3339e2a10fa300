package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os/exec"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store"
)

// runKVUpdate is the read-modify-write loop as one command: CMD gets the
// current value on stdin (empty when the key is absent) and its stdout is
// written back with a check-and-set; on conflict the key is read again and
// CMD runs again.
func runKVUpdate(ctx context.Context, e *env, args []string) error {
	f := newKVFlags(e, "update")
	f.cmdAfter = 1 // KEY [flags --] CMD...
	attempts := f.Int("max-attempts", 0, "give up after `N` attempts lost the race to other writers (default: no count, only -max-time)")
	budget := f.Duration("max-time", defaultUpdateBudget, "give up once `DUR` has passed without a write going through (a time, not a count, so a shell loop of many processes gets through)")
	if err := f.parse(args); err != nil {
		return err
	}
	rest := f.Args()
	if len(rest) > 1 && rest[1] == "--" {
		rest = append(rest[:1:1], rest[2:]...)
	}
	if len(rest) < 2 {
		return usagef("kv update: want KEY -- CMD [ARGS...]")
	}
	if given(f.FlagSet, "max-attempts") && *attempts < 1 {
		return usagef("kv update: -max-attempts %d: want at least 1", *attempts)
	}
	if *budget <= 0 {
		return usagef("kv update: -max-time %v: want a positive duration", *budget)
	}
	opts := &cas.Options{MaxAttempts: *attempts, Timeout: *budget}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = math.MaxInt32 // only the time budget counts
	}
	key, argv := rest[0], rest[1:]
	s, err := openStore(ctx, e, *f.store)
	if err != nil {
		return err
	}
	defer s.Close()

	fn := func(cur []byte, _ bool) (cas.Decision, error) {
		out, err := runFilter(ctx, e, argv, cur)
		if err != nil {
			return cas.Decision{}, err
		}
		return cas.Set(out), nil
	}
	streak := &streakStore{Store: s}
	ss := &settlingStore{Store: streak}
	_, err = cas.Update(ctx, ss, key, fn, opts)
	var ce *cas.ContendedError
	var xe *exitError // from runFilter: CMD failed
	switch {
	case err != nil && (errors.Is(err, store.ErrUnknownOutcome) || ss.mayHaveWritten()):
		return unknownWrite(ctx, "kv update", "writing "+key, "latchkey kv get "+key, err)
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("kv update: %s: %w; nothing written", key, ctx.Err())
	case errors.As(err, &ce) && ce.Deadline:
		return failf("kv update: gave up: %s too contended after %d attempts in %v (-max-time); nothing written", key, ce.Attempts, *budget)
	case errors.As(err, &ce):
		return failf("kv update: gave up: %s too contended after %d attempts (-max-attempts); nothing written", key, ce.Attempts)
	case errors.As(err, &xe):
		return xe
	case err != nil:
		// cas retries store failures until the earlier of -max-time
		// and --timeout.
		tried := streak.account()
		if tried != "" && e.timeout > 0 && e.timeout < *budget {
			tried += fmt.Sprintf(" (--timeout %v)", e.timeout)
		} else if tried != "" {
			tried += fmt.Sprintf(" (-max-time %v)", *budget)
		}
		line, cause := plainMessageTried(err, fmt.Sprintf("kv update: %v; nothing written", err), tried, streak.lastAnswer())
		return &exitError{code: exitFail, msg: line, cause: cause}
	}
	fmt.Fprintf(e.stdout, "Success! Data written to: %s\n", key)
	return nil
}

// defaultUpdateBudget is kv update's default -max-time: long enough for
// tens of processes updating one key from shell loops, short enough that a
// key nobody can win is reported.
const defaultUpdateBudget = 30 * time.Second

// given reports whether flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// runFilter runs argv with in on stdin and returns its stdout, at most
// maxValueBytes of it. Its stderr goes to ours. A failing command yields
// an *exitError carrying its exit code.
func runFilter(ctx context.Context, e *env, argv []string, in []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// Interrupted: CMD gets SIGTERM, as a shell's job would, and SIGKILL if
	// it is still there 5s later.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = e.environ()
	cmd.Stdin = bytes.NewReader(in)
	out := &cappedBuffer{max: maxValueBytes}
	cmd.Stdout = out
	cmd.Stderr = e.stderr
	err := cmd.Run()
	var xe *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err() // CMD was stopped: see runKVUpdate
	case errors.As(err, &xe):
		code, desc := describeExit(argv[0], xe)
		if code > 128 {
			code = exitFail // killed by a signal: not CMD's own exit code
		}
		return nil, &exitError{code: code, msg: fmt.Sprintf("kv update: %s; nothing written", desc)}
	case err != nil:
		return nil, &exitError{code: exitFail, msg: fmt.Sprintf("kv update: %v; nothing written", err)}
	case out.over:
		return nil, &exitError{code: exitFail, msg: fmt.Sprintf("kv update: %s wrote more than %d bytes; nothing written", argv[0], maxValueBytes)}
	}
	return out.Bytes(), nil
}

// cappedBuffer keeps at most max bytes and notes whether more came.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

// Write accepts everything, so the command is never blocked or failed by
// a short write; what passes the cap is dropped and noted.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - b.Len(); n > room {
		b.over = true
		p = p[:max(room, 0)]
	}
	b.Buffer.Write(p)
	return n, nil
}
