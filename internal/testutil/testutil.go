// Package testutil holds the helpers that tests in several packages share:
// the peer a test reads from the environment (skipped locally, failed
// under CI), random names for buckets and prefixes, re-running the test
// binary as a child process, serving a handler over loopback HTTP, and
// closing what a test opened (Opened). It
// is imported
// only from _test.go files (internal/depcheck checks this) and depends on
// the standard library only, so that any package's internal tests can use
// it without an import cycle.
package testutil

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Peer returns the value of the environment variable env, which names a
// peer the test needs: an emulator's address, a tool's path, a key. When
// it is unset or empty, the test ends through Unavailable (it fails under
// CI=true and skips elsewhere) with a message that says what env names and
// how .ci/run provides it, which is what: "a running Azurite blob endpoint
// such as http://127.0.0.1:10000/devstoreaccount1 (.ci/run starts one)".
func Peer(tb testing.TB, env, what string) string {
	tb.Helper()
	v := os.Getenv(env)
	if v == "" {
		Unavailable(tb, "%s is not set: it names %s", env, what)
	}
	return v
}

// Unavailable ends the test for want of something outside it (a peer, a
// tool, a privilege) that format and args describe. Under CI=true (.ci/run
// sets it, and installs and starts every peer) it fails the test, so that
// CI can never pass by skipping; elsewhere it skips the test. It does not
// return.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("CI=true but "+format, args...)
	}
	tb.Skipf(format, args...)
}

// RandomName returns prefix followed by 26 random lower-case letters and
// digits (crypto/rand's Text, lower-cased), valid in S3, GCS and Azure
// bucket and container names. Tests that share a peer use it so that runs
// never see each other's data.
func RandomName(prefix string) string {
	return prefix + strings.ToLower(rand.Text())
}

// Opened ends the test when err, the error of opening c, is not nil, and
// otherwise closes c when tb ends:
//
//	s, err := filestore.Open(tb.TempDir(), nil)
//	testutil.Opened(tb, s, err)
func Opened(tb testing.TB, c io.Closer, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
}

// Child returns a command that re-runs the current test binary with no test
// selected (-test.run=^$) and env ("NAME=value") added to this process's
// environment, so that the package's TestMain, seeing one of those
// variables, can act as a child process instead of running tests. Stdin,
// stdout and stderr are left for the caller to set.
func Child(env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Serve serves h on a fresh 127.0.0.1 port until tb ends. Every request's
// context is cancelled when tb ends, before the server is closed, so that
// long-polling requests (Consul blocking queries, watches) return instead
// of holding Close up. Register the cleanups of what h uses (the handler's
// and the engine's Close) before calling Serve: cleanups run last first,
// so the server stops before them.
func Serve(tb testing.TB, h http.Handler) *httptest.Server {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewUnstartedServer(h)
	srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	srv.Start()
	tb.Cleanup(func() {
		cancel()
		srv.Close()
	})
	return srv
}

// DeadAddr returns a loopback HOST:PORT that nothing listens on: a port
// just bound and freed, so a dial there is refused.
func DeadAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}
