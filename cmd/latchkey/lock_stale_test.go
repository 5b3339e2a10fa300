package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeurl"
)

// openCLIStore opens the store the cli's commands use.
func openCLIStore(t *testing.T, c *cli) store.Store {
	t.Helper()
	s, err := storeurl.Open(context.Background(), c.env[storeEnv])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// crashedHolder takes the lock at key as a holder that then dies without
// a word: it never renews nor releases.
func crashedHolder(t *testing.T, s store.Store, key string, ttl time.Duration) {
	t.Helper()
	lk, err := lease.NewLocker(s, key, &lease.Options{Holder: "vm:18503", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.TryAcquire(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The README's cron line: a holder that was SIGKILLed leaves its record;
// --wait 0 gives up at once while the record is fresh, and once it looks
// stale (not renewed for two TTLs) it confirms it unchanged for a TTL and
// takes it over, saying so.
func TestLockRunWaitZeroRecoversStaleLock(t *testing.T) {
	t.Parallel() // waits out three TTLs of one second
	c := newCLI(t)
	const ttl = time.Second
	crashedHolder(t, openCLIStore(t, c), "jobs/rotate-logs", ttl)
	start := time.Now()
	c.fails(exitConflict, `held by "vm:18503" (token 1)`, "lock", "run", "--wait", "0", "jobs/rotate-logs", "--", "true")
	if d := time.Since(start); d > ttl {
		t.Errorf("--wait 0 on a fresh record took %v, want an answer at once", d)
	}
	time.Sleep(lease.StaleAfter(ttl) + ttl/10)
	if out := c.ok("lock", "show", "jobs/rotate-logs"); !strings.Contains(out, "state:     looks stale") {
		t.Errorf("lock show of a stale record:\n%s", out)
	}
	start = time.Now()
	o := c.run("lock", "run", "--wait", "0", "jobs/rotate-logs", "--", "sh", "-c", `test "$LATCHKEY_FENCING_TOKEN" = 2`)
	if o.code != 0 || !strings.Contains(o.stderr, "looks stale; confirming for") || !strings.Contains(o.stderr, `held by vm:18503 (token 1)`) {
		t.Fatalf("--wait 0 on a stale record: exit %d, stderr %q; want 0 and the stale hint", o.code, o.stderr)
	}
	if d := time.Since(start); d < ttl {
		t.Errorf("took the stale record over after %v, before confirming it unchanged for a TTL (%v)", d, ttl)
	}
}

func TestLockListAndShowAge(t *testing.T) {
	c := newCLI(t)
	c.ok("lock", "run", "--holder", "cron@a", "jobs/a", "--", "true")
	crashedHolder(t, openCLIStore(t, c), "jobs/b", time.Minute)
	c.ok("kv", "put", "jobs/c", "not a lock")
	c.ok("lock", "run", "other/d", "--", "true")
	out := c.ok("lock", "list", "jobs/")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "KEY") ||
		!strings.Contains(lines[1], "jobs/a") || !strings.Contains(lines[1], "cron@a") || !strings.HasSuffix(lines[1], "released") ||
		!strings.Contains(lines[2], "jobs/b") || !strings.Contains(lines[2], "vm:18503") || !strings.HasSuffix(lines[2], "held") {
		t.Fatalf("lock list jobs/:\n%s\nwant a header, jobs/a released by cron@a, jobs/b held by vm:18503", out)
	}
	var recs []showRecord
	for _, l := range strings.Split(strings.TrimSpace(c.ok("lock", "list", "--json", "jobs/")), "\n") {
		var r showRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("lock list --json line %q: %v", l, err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 2 || recs[0].Key != "jobs/a" || recs[0].State != "released" || recs[1].Key != "jobs/b" ||
		recs[1].State != "held" || recs[1].Token != 1 || recs[1].TTLNanos != int64(time.Minute) || recs[1].AgeMillis < 0 {
		t.Errorf("lock list --json = %+v", recs)
	}
	if out := c.ok("lock", "show", "jobs/b"); !strings.Contains(out, "(writer's clock), ") || !strings.Contains(out, " ago\n") {
		t.Errorf("lock show lacks the age of the last renewal:\n%s", out)
	}
	c.fails(2, "exactly one PREFIX", "lock", "list")
}

// A lock record deleted by hand: lock show says so, and the next lock run
// warns and gets a token above the deleted record's.
func TestLockDeletedRecordWarns(t *testing.T) {
	c := newCLI(t)
	c.ok("lock", "run", "k", "--", "true")
	c.ok("kv", "delete", "k")
	c.fails(1, "deleted by hand", "lock", "show", "k")
	o := c.run("lock", "run", "k", "--", "sh", "-c", `test "$LATCHKEY_FENCING_TOKEN" = 4294967297`)
	if o.code != 0 || !strings.Contains(o.stderr, "had been deleted by hand") {
		t.Errorf("lock run after the record was deleted: exit %d, stderr %q; want 0 (token 2^32+1) and a warning", o.code, o.stderr)
	}
}

// A waiting lock run says when the store is unreachable, once.
func TestLockRunSaysStoreUnreachable(t *testing.T) {
	c := newCLI(t)
	o := c.run("lock", "run", "--store", "consul://127.0.0.1:1/locks", "--wait", "500ms", "k", "--", "true")
	if o.code != exitUnavailable || strings.Count(o.stderr, "waiting for k: store unreachable (127.0.0.1:1: connection refused); retrying") != 1 {
		t.Errorf("lock run against a dead store: exit %d, stderr %q; want 69 and one 'store unreachable' line", o.code, o.stderr)
	}
	o = c.run("lock", "run", "--quiet", "--store", "consul://127.0.0.1:1/locks", "--wait", "300ms", "k", "--", "true")
	if o.code != exitUnavailable || strings.Contains(o.stderr, "retrying") {
		t.Errorf("--quiet: exit %d, stderr %q; want 69 without progress lines", o.code, o.stderr)
	}
}

// publish --lease KEY --wait D bounds the wait for the lease.
func TestPublishLeaseWait(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a.txt": "one"})
	inDir(t, src)
	c.fails(2, "--wait needs --lease", "publish", "--prefix", "site", "--wait", "1s", "a.txt")
	crashedHolder(t, openCLIStore(t, c), "locks/site", time.Minute)
	c.fails(1, `held by "vm:18503" (token 1)`, "publish", "--prefix", "site", "--lease", "locks/site", "--wait", "0", "a.txt")
	c.fails(1, "not acquired within --wait 200ms", "publish", "--prefix", "site", "--lease", "locks/site", "--wait", "200ms", "a.txt")
	if gen := strings.TrimSpace(c.ok("publish", "--prefix", "site", "--lease", "locks/free", "--wait", "0", "a.txt")); gen == "" {
		t.Error("publish under a free lease printed no generation")
	}
}

// lock show of a dead holder shows when it was last renewed, when it
// expires and when a taker may take it over, computed from the record:
// two calls print the same times, and they are the record's renew time
// plus one and two TTLs.
func TestLockShowDeadHolderTimesFixed(t *testing.T) {
	c := newCLI(t)
	crashedHolder(t, openCLIStore(t, c), "jobs/x", time.Minute)
	times := func() (string, []string) {
		out := c.ok("lock", "show", "jobs/x")
		var lines []string
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, "expires:") || strings.HasPrefix(l, "takeover:") {
				lines = append(lines, l)
			}
			if strings.HasPrefix(l, "renewed:") {
				lines = append(lines, strings.Split(l, ",")[0]) // its age moves, its time does not
			}
		}
		return out, lines
	}
	out1, first := times()
	time.Sleep(20 * time.Millisecond)
	out2, second := times()
	if len(first) != 3 || !slices.Equal(first, second) {
		t.Fatalf("lock show of a dead holder, twice:\n%s\n%s\nwant the same renewed, expires and takeover times", out1, out2)
	}
	// lock run --wait 0 says the same of it on every call too.
	run1 := c.fails(exitConflict, `"jobs/x" held by "vm:18503" (token 1), last renewed `, "lock", "run", "--wait", "0", "jobs/x", "--", "true")
	time.Sleep(1100 * time.Millisecond) // the lease's own estimate moves by the second
	if run2 := c.run("lock", "run", "--wait", "0", "jobs/x", "--", "true"); run2.stderr != run1.stderr {
		t.Errorf("lock run --wait 0 twice on a dead holder:\n%s%s", run1.stderr, run2.stderr)
	}
	var rec showRecord
	if err := json.Unmarshal([]byte(c.ok("lock", "show", "--json", "jobs/x")), &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Expires.Equal(rec.Renewed.Add(time.Minute)) || !rec.StaleFrom.Equal(rec.Renewed.Add(2*time.Minute)) {
		t.Fatalf("--json: renewed %v, expires %v, stale_from %v; want renewed + 1 and + 2 TTLs", rec.Renewed, rec.Expires, rec.StaleFrom)
	}
	for _, want := range []string{rec.Expires.Format(time.RFC3339Nano) + " (renewed + TTL, writer's clock) unless renewed",
		"takeover:  once a waiter has seen this record unchanged for 1m0s; by lock run --wait 0 from " + rec.StaleFrom.Format(time.RFC3339Nano)} {
		if !strings.Contains(out1, want) {
			t.Errorf("lock show lacks %q:\n%s", want, out1)
		}
	}
}
