// Package bench is `latchkey bench`: durable compare-and-set throughput
// and latency through the Consul KV HTTP API (against a server it starts
// or one given with --url, side by side with etcd), lock handoff
// (--lock), cas.Update from separate processes (--update-procs) and lock
// run's waiting queue (--queue). See docs/benchmarks.md.
//
// cmd/latchkey wires it: Run takes the arguments after "bench" and
// returns an error whose exit code the command decides (an *Error says
// its own). The bench starts the executable it runs in as its child
// processes (latchkey serve, the --update-worker processes, lock run), so
// Run must run inside the latchkey binary; Instrument is the hook lock run
// calls so that --queue can count its requests.
package bench

import (
	"fmt"
	"io"
)

// Env is everything the bench touches of the outside world, so tests can
// run it in-process.
type Env struct {
	Stdin   io.Reader // an --update-worker's start signal
	Stdout  io.Writer // the tables
	Getenv  func(string) string
	Environ func() []string // the environment a child process inherits
}

// Error is a failure the bench words itself: the command prints Msg as it
// is and exits 2 when Usage (a bad command line), 1 otherwise.
type Error struct {
	Msg   string
	Usage bool
}

func (e *Error) Error() string { return e.Msg }

// failf returns an *Error for a failed measurement.
func failf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// usagef returns an *Error for a bad command line.
func usagef(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Usage: true}
}
