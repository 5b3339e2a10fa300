// Command latchkey is the command-line face of the latchkey library and
// server: key-value check-and-set, locks that run a command only while held,
// atomic publication, probing and benchmarking of stores, and `serve`, the
// durable S3- and Consul-compatible server.
//
// main only wires: flags and environment go to run, which returns an error;
// the error's exit code (see exitError) becomes the process's.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/store"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == supervisorArg {
		os.Exit(runSupervisor(os.Args[2:]))
	}
	// SIGINT and SIGTERM cancel ctx: the command cleans up (releases its
	// lock, stops its child, shuts the server down) and returns.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	caught := make(chan os.Signal, 1)
	go func() {
		s := <-sigs
		caught <- s
		cancel()
	}()
	e := &env{
		stdin:   os.Stdin,
		stdout:  os.Stdout,
		stderr:  os.Stderr,
		getenv:  os.Getenv,
		environ: os.Environ,
	}
	err := run(ctx, os.Args[1:], e)
	signal.Stop(sigs)
	select {
	case s := <-caught:
		err = interrupted(err, s)
	default:
	}
	cancel()
	os.Exit(report(err, os.Stderr, e.isVerbose()))
}

// interrupted is the outcome of a command that got signal sig: a command
// that still finished cleanly (serve's graceful shutdown) exits 0, a
// child's exit code passed through stays, and any other failure exits
// 128+N as a shell reports a process killed by signal N (130 for SIGINT,
// 143 for SIGTERM), saying "interrupted" rather than "context canceled".
func interrupted(err error, sig os.Signal) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.msg == "" {
		return err // a child's own exit code, or the command said it all
	}
	code := exitFail
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	msg := err.Error()
	if errors.As(err, &ee) {
		msg = ee.msg
		if ee.code == exitUnknown {
			code = ee.code // the write may have applied: that matters more
		}
	}
	msg = strings.ReplaceAll(msg, context.Canceled.Error(), "interrupted by "+signalName(sig))
	return &exitError{code: code, msg: msg}
}

// env is everything a command may touch of the outside world, so tests can
// run commands in-process. A child process (lock run's CMD, kv update's
// filter) writes to stdout and stderr too: unless they are *os.File, which
// the child gets as is, they must be safe for concurrent use.
type env struct {
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	getenv  func(string) string
	environ func() []string // the environment a child process inherits
	store   string          // latchkey --store URL COMMAND: the store when the command gets no --store
	timeout time.Duration   // latchkey --timeout DUR COMMAND: the command's deadline
	// wrapStore, when set (by tests), wraps every store a command opens.
	wrapStore func(store.Store) store.Store
	// verbose is set by --verbose (before the command or among its
	// flags) or LATCHKEY_VERBOSE=1: failures print their raw cause too.
	// run allocates it; the env's copies share it.
	verbose *bool
}

// verboseEnv is the environment variable for --verbose.
const verboseEnv = "LATCHKEY_VERBOSE"

// isVerbose reports whether the raw causes of failures are printed.
func (e *env) isVerbose() bool {
	return e.verbose != nil && *e.verbose || e.getenv != nil && e.getenv(verboseEnv) == "1"
}

// Exit codes, documented in usage and exitCodesHelp. They are a contract
// with scripts: add, never renumber.
const (
	exitOK    = 0
	exitFail  = 1 // the operation did not apply: CAS refused, lock not held, contended
	exitUsage = 2 // bad command line
	// exitUnavailable (sysexits EX_UNAVAILABLE): lock run could not reach
	// the store, or the store refused it (access denied, unsupported).
	exitUnavailable = 69
	// exitUnknown: a write was sent but its answer never came (timeout,
	// interruption): it may or may not have applied.
	exitUnknown = 74
	// exitConflict (sysexits EX_TEMPFAIL): lock run did not get the lock
	// because another holder has it; --conflict-exit-code changes it.
	exitConflict = 75
)

// exitCodesHelp is latchkey help exit-codes: every code any command exits
// with. Each command's help repeats the ones it uses.
const exitCodesHelp = `Exit codes (every command; each command's help lists its own):
  0    success
  1    the operation did not apply or failed: CAS refused, too contended, no
       such key or lock, lock lost while CMD ran, CMD failed (lock run
       without --child-exit-code), any other error
  2    bad command line: unknown flag or command, a flag's bad value (say
       -modify-index=abc on a store with numeric versions), a --store or
       $LATCHKEY_STORE that is not a URL of a known scheme
  69   lock run: the store could not be reached or refused the request
       (unreachable, no leader, access denied), so the lock was not acquired
  74   a write was sent but never answered (timed out, or interrupted before
       the answer came; kv and lock release wait 3s for it): it may or may
       not have applied; look before retrying (kv put, kv delete, kv update,
       kv txn, lock release, publish)
  75   lock run: not acquired because another holder has it (--wait 0, or
       --wait ran out); --conflict-exit-code N changes it (as flock -E)
  N    lock run --child-exit-code: CMD's own exit code (128+signal if a
       signal ended it); kv update: CMD's own code when CMD failed
  128+N  interrupted by signal N (130 SIGINT, 143 SIGTERM), unless the
       outcome is one of the above
`

// exitError carries a process exit code. A nil msg prints nothing (the
// command already said what happened, or passes a child's code through).
// cause, when set, is the raw failure behind msg, printed under it with
// --verbose.
type exitError struct {
	code  int
	msg   string
	cause string
}

func (e *exitError) Error() string { return e.msg }

// failf returns an error that exits 1 with a one-line message.
func failf(format string, args ...any) error {
	return &exitError{code: exitFail, msg: fmt.Sprintf(format, args...)}
}

// usagef returns an error that exits 2 with a one-line message.
func usagef(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// report prints err as one line and returns the exit code; with verbose,
// the raw cause behind the line follows on a second, indented one.
func report(err error, stderr io.Writer, verbose bool) int {
	if err == nil {
		return exitOK
	}
	code, msg, cause := exitFail, capErrors(err).Error(), ""
	var ee *exitError
	if errors.As(err, &ee) {
		code, msg, cause = ee.code, ee.msg, ee.cause
	} else {
		msg, cause = plainMessage(err, msg)
	}
	if msg != "" {
		msg = identifierWords.Replace(msg)
		// One line, even when a cause (a server's error body, a child's
		// message) brought line breaks along.
		fmt.Fprintln(stderr, "latchkey: "+oneLine(msg))
		if verbose {
			printCause(stderr, cause)
		}
	}
	return code
}

// oneLine joins the non-blank lines of msg with "; ".
func oneLine(msg string) string {
	var lines []string
	for l := range strings.Lines(msg) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}
