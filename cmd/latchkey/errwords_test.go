package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// noLeaderConsul is a Consul agent that answers every KV request with
// Consul's 500 of an election in progress (and its status API with no
// leader), until healthy is set; from
// then on it passes requests to next (when not nil).
func noLeaderConsul(t *testing.T, next string) (addr string, healthy *atomic.Bool) {
	healthy = new(atomic.Bool)
	var proxy http.Handler
	if next != "" {
		u, err := url.Parse(next)
		if err != nil {
			t.Fatal(err)
		}
		proxy = httputil.NewSingleHostReverseProxy(u)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if healthy.Load() && proxy != nil {
			proxy.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/v1/status/leader" { // as Consul answers in an election
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`""`))
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte("No cluster leader"))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), healthy
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// plainLine checks one line of a failure: at most maxLine characters
// after "latchkey: ", no library or SDK wording, no nested "retrying".
func plainLine(t *testing.T, line string) {
	t.Helper()
	msg := strings.TrimPrefix(line, "latchkey: ")
	if len(msg) > maxLine {
		t.Errorf("line of %d characters (want at most %d): %q", len(msg), maxLine, line)
	}
	for _, raw := range []string{"consulstore", "cas: update", "lease: acquire", "transient failure", "Unexpected response code",
		"Options.", "retrying: retrying", "ctx's", "context deadline exceeded"} {
		if strings.Contains(line, raw) {
			t.Errorf("line %q carries the library's wording %q", line, raw)
		}
	}
}

// A store failure is one plain line: "store unreachable" only when no
// connection was made, "store answered but refused (500: no leader)"
// when the agent answered, how many tries over how long when the
// command retried, what to do, and "outcome unknown" for a write sent
// without an answer; --verbose adds the raw cause as a second line.
func TestStoreTroubleOneLine(t *testing.T) {
	c := newCLI(t)
	leaderless, _ := noLeaderConsul(t, "")
	refused := "consul://" + leaderless + "/app"
	dead := "consul://" + deadAddr(t) + "/app"

	o := c.fails(exitFail, "kv get: store answered but refused (500: no leader); check the store's leader and health", "kv", "get", "--store", refused, "k")
	plainLine(t, o.stderr)
	o = c.fails(exitFail, "kv update: store answered but refused (500: no leader) after ", "kv", "update", "--store", refused, "-max-time", "1s", "k", "--", "cat")
	plainLine(t, o.stderr)
	if !regexp.MustCompile(`after \d+ tries over [0-9.]+m?s \(-max-time 1s\); nothing written; check`).MatchString(o.stderr) {
		t.Errorf("kv update: %q, want how many tries over how long, and that -max-time ran out", o.stderr)
	}
	o = c.fails(exitUnknown, "kv put: outcome unknown: the write may or may not have applied: store answered but refused (500: no leader) while writing k; check with `latchkey kv get k`",
		"kv", "put", "--store", refused, "k", "v")
	plainLine(t, o.stderr)

	o = c.fails(exitFail, "kv get: store unreachable (127.0.0.1:", "kv", "get", "--store", dead, "k")
	plainLine(t, o.stderr)
	if !strings.Contains(o.stderr, ": connection refused); check the store is up and --store is right") {
		t.Errorf("kv get of a dead store: %q", o.stderr)
	}

	// A write whose answer never came, cut off by --timeout.
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/status/leader" {
			w.Write([]byte(`"127.0.0.1:8300"`))
			return
		}
		select {
		case <-r.Context().Done():
		case <-t.Context().Done():
		}
	}))
	t.Cleanup(silent.Close) // after t.Context ends
	o = c.fails(exitUnknown, "kv put: outcome unknown: the write may or may not have applied: timed out while writing k, before the store answered; check with `latchkey kv get k`",
		"--timeout", "300ms", "kv", "put", "--store", "consul://"+strings.TrimPrefix(silent.URL, "http://")+"/app", "k", "v")
	plainLine(t, o.stderr)

	// --verbose (a flag of the command, or latchkey's own) adds the raw
	// cause, indented, as the second line.
	for _, args := range [][]string{{"kv", "get", "--verbose", "--store", refused, "k"}, {"--verbose", "kv", "get", "--store", refused, "k"}} {
		o = c.run(args...)
		lines := strings.Split(strings.TrimSuffix(o.stderr, "\n"), "\n")
		if o.code != exitFail || len(lines) != 2 || !strings.HasPrefix(lines[1], "  cause: ") || !strings.Contains(lines[1], "No cluster leader") {
			t.Errorf("%v: exit %d, stderr %q; want the plain line, then '  cause: ' and the raw text", args, o.code, o.stderr)
		}
		plainLine(t, lines[0])
	}
}

// lock run says once that the store refuses (not "unreachable": the agent
// answered), once that it answers again with how many tries over how
// long, then runs CMD; when it never recovers, the last line says so.
func TestLockRunStoreRefusingStreak(t *testing.T) {
	serveURL, _ := startServe(t, map[string]string{"LATCHKEY_DATA_DIR": t.TempDir(), "LATCHKEY_LISTEN": "127.0.0.1:0"})
	addr, healthy := noLeaderConsul(t, serveURL)
	c := newCLI(t)
	store := "consul://" + addr + "/locks"

	o := c.run("lock", "run", "--store", store, "--wait", "1s", "k", "--", "true")
	lines := strings.Split(strings.TrimSuffix(o.stderr, "\n"), "\n")
	if o.code != exitUnavailable || len(lines) != 2 || strings.Contains(o.stderr, "unreachable") {
		t.Fatalf("lock run against a leaderless store: exit %d, stderr %q; want 69, a waiting line and a last line, no 'unreachable'", o.code, o.stderr)
	}
	if want := "latchkey: lock run: waiting for k: store answered but refused (500: no leader); retrying until --wait 1s runs out"; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if !regexp.MustCompile(`^latchkey: lock run: not acquired within --wait 1s: store answered but refused \(500: no leader\) after \d+ tries over \d`).MatchString(lines[1]) {
		t.Errorf("last line %q", lines[1])
	}
	plainLine(t, lines[1])

	time.AfterFunc(700*time.Millisecond, func() { healthy.Store(true) })
	o = c.run("lock", "run", "--store", store, "--wait", "20s", "k", "--", "echo", "ran")
	lines = strings.Split(strings.TrimSuffix(o.stderr, "\n"), "\n")
	if o.code != 0 || o.stdout != "ran\n" || len(lines) != 2 ||
		!regexp.MustCompile(`^latchkey: lock run: store answered again after \d+ tries over \d`).MatchString(lines[1]) {
		t.Fatalf("lock run across an election: exit %d, stdout %q, stderr %q; want CMD run and the streak said in two lines", o.code, o.stdout, o.stderr)
	}
}

// cutStore answers Get with Consul's 500 "No cluster leader" while
// refusing is set, and otherwise holds each Get until its ctx ends, as a
// loaded machine's client sees its last request cut by its own deadline.
type cutStore struct {
	store.Store
	refusing atomic.Bool
}

func (s *cutStore) Get(ctx context.Context, key string) (store.Entry, error) {
	if s.refusing.Load() {
		return store.Entry{}, &store.OpError{Op: "get", Key: key, Backend: "consulstore", Status: 500, Kind: store.ErrTransient, Err: errors.New("No cluster leader")}
	}
	<-ctx.Done()
	return store.Entry{}, &store.OpError{Op: "get", Key: key, Backend: "consulstore", Kind: store.ErrTransient, Err: ctx.Err()}
}

// When the request running as a command's deadline ends is cut short by
// it, the last line says the store's last answer (refused), not "not
// answering": that request is no news of the store. (TestLockRunStore-
// RefusingStreak said "store not answering" once on a loaded machine.)
func TestStreakSaysTheStoresLastAnswer(t *testing.T) {
	cs := &cutStore{Store: memstore.New()}
	cs.refusing.Store(true)
	s := &streakStore{Store: cs}
	for range 3 {
		s.Get(t.Context(), "k")
	}
	cs.refusing.Store(false)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	_, err := s.Get(ctx, "k")
	err = fmt.Errorf("not acquired within --wait 1s: lease: acquire %q: %w; last attempt: %w", "k", ctx.Err(), err)
	line, _ := plainMessageTried(err, "lock run: "+err.Error(), s.account(), s.lastAnswer())
	if !strings.Contains(line, "store answered but refused (500: no leader) after 3 tries") {
		t.Fatalf("line %q; want the store's last answer, a refusal, after 3 tries", line)
	}
	// Without a request cut short, the failure in the error is said.
	fresh := &streakStore{Store: cs}
	cs.refusing.Store(true)
	_, err = fresh.Get(t.Context(), "k")
	if a := fresh.lastAnswer(); a != nil {
		t.Fatalf("lastAnswer %v after a refusal that nothing cut; want nil", a)
	}
	line, _ = plainMessageTried(err, "lock run: "+err.Error(), fresh.account(), fresh.lastAnswer())
	if !strings.Contains(line, "store answered but refused") {
		t.Fatalf("line %q; want the refusal", line)
	}
}
