package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLockRunExportsTokenAndReleases(t *testing.T) {
	c := newCLI(t)
	for want := 1; want <= 3; want++ {
		c.ok("lock", "run", "--ttl", "10s", "jobs/nightly", "--", "sh", "-c",
			`test "$LATCHKEY_LOCK_HELD" = 1 && test "$LATCHKEY_FENCING_TOKEN" = `+strconv.Itoa(want))
		var rec struct {
			Key      string    `json:"key"`
			Holder   string    `json:"holder"`
			Token    int       `json:"token"`
			Released bool      `json:"released"`
			TTLMs    int64     `json:"ttl_ms"`
			Acquired time.Time `json:"acquired"`
			Renewed  time.Time `json:"renewed"`
			Version  string    `json:"version"`
		}
		before := time.Now()
		if err := json.Unmarshal([]byte(c.ok("lock", "show", "--json", "jobs/nightly")), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Token != want || !rec.Released || rec.Key != "jobs/nightly" || rec.Holder == "" || rec.TTLMs != 10000 || rec.Version == "" {
			t.Fatalf("after run %d: record %+v, want key, holder, token %d, released, ttl_ms 10000, version", want, rec, want)
		}
		// Wall-clock times (this machine's): acquired, then the release's
		// write as the last renew, both just now.
		if rec.Acquired.IsZero() || rec.Renewed.Before(rec.Acquired) || rec.Renewed.After(before) || before.Sub(rec.Acquired) > time.Minute {
			t.Errorf("after run %d: acquired %v, renewed %v; want acquired ≤ renewed ≤ now", want, rec.Acquired, rec.Renewed)
		}
	}
}

func TestLockRunExitCodes(t *testing.T) {
	c := newCLI(t)
	c.fails(1, "sh exited with status 3", "lock", "run", "k", "--", "sh", "-c", "exit 3")
	if o := c.run("lock", "run", "--child-exit-code", "k", "--", "sh", "-c", "exit 3"); o.code != 3 || o.stderr != "" {
		t.Errorf("--child-exit-code: exit %d, stderr %q; want 3 and nothing", o.code, o.stderr)
	}
	if o := c.run("lock", "run", "--child-exit-code", "k", "--", "sh", "-c", "kill -KILL $$"); o.code != 128+9 {
		t.Errorf("--child-exit-code with a killed child: exit %d, want 137", o.code)
	}
	c.fails(1, "no-such-command", "lock", "run", "k", "--", "no-such-command-latchkey")
	// Signals are named as a shell user knows them, not "terminated".
	c.fails(1, "lock run: sh was killed by SIGTERM", "lock", "run", "k", "--", "sh", "-c", "kill -TERM $$")
}

func TestLockRunWaitZeroWhenHeld(t *testing.T) {
	c := newCLI(t)
	// The holder's CMD runs until the test creates the file go (at most
	// 60s), so the checks below cannot outlast it on a slow machine.
	goFile := filepath.Join(t.TempDir(), "go")
	done := make(chan outcome)
	go func() {
		done <- c.run("lock", "run", "--ttl", "5s", "k", "--", "sh", "-c",
			`i=0; while [ ! -e "$1" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`, "sh", goFile)
	}()
	// Wait until the first run holds the lock.
	for {
		o := c.run("lock", "show", "k")
		if o.code == 0 && strings.Contains(o.stdout, "state:     held") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.fails(exitConflict, "held by", "lock", "run", "--wait", "0", "k", "--", "true")
	c.fails(9, "held by", "lock", "run", "--wait", "0", "--conflict-exit-code", "9", "k", "--", "true")
	c.fails(exitConflict, "not acquired within --wait 200ms", "lock", "run", "--quiet", "--wait", "200ms", "k", "--", "true")
	// Without --quiet, a waiting lock run says whom it waits for, once.
	o := c.run("lock", "run", "--wait", "300ms", "k", "--", "true")
	if lines := strings.Split(strings.TrimSpace(o.stderr), "\n"); o.code != exitConflict || len(lines) != 2 ||
		!regexp.MustCompile(`^latchkey: lock run: waiting for k: held by \S+:\d+ \(token 1\)$`).MatchString(lines[0]) ||
		!strings.Contains(lines[1], "not acquired within --wait 300ms") {
		t.Errorf("waiting lock run: exit %d, stderr %q; want 75, one waiting line naming the holder and token, then the error", o.code, o.stderr)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.code != 0 {
		t.Fatalf("holder: exit %d, stderr %q", o.code, o.stderr)
	}
	c.ok("lock", "run", "--wait", "0", "k", "--", "true")
}

func TestLockShowAndRelease(t *testing.T) {
	t.Parallel() // waits out a TTL after the release by name
	c := newCLI(t)
	c.fails(1, `no lock at "k"`, "lock", "show", "k")
	c.fails(1, `no lock at "k"`, "lock", "release", "--force", "k")
	c.ok("lock", "run", "--holder", "cron@a", "k", "--", "true")
	out := c.ok("lock", "show", "k")
	for _, want := range []string{"state:     released", "holder:    cron@a", "token:     1", "ttl:       15s"} {
		if !strings.Contains(out, want) {
			t.Errorf("lock show output lacks %q:\n%s", want, out)
		}
	}
	// Release a live holder's lock by its name: the holder loses it.
	done := make(chan outcome)
	go func() { done <- c.run("lock", "run", "--holder", "cron@b", "--ttl", "6s", "k", "--", "sleep", "30") }()
	for !strings.Contains(c.run("lock", "show", "k").stdout, "state:     held") {
		time.Sleep(10 * time.Millisecond)
	}
	c.fails(1, `"k" is held by "cron@b" (token 2), not by "cron@a"; nothing released`, "lock", "release", "--holder", "cron@a", "k")
	if got := c.ok("lock", "release", "--holder", "cron@b", "k"); got != "released k (token 2)\n" {
		t.Errorf("release output %q", got)
	}
	o := <-done
	if o.code != 1 || !strings.Contains(o.stderr, "lost") {
		t.Errorf("holder after its lock was released: exit %d, stderr %q; want 1 and lost", o.code, o.stderr)
	}
	c.ok("lock", "run", "k", "--", "true")
	if out := c.ok("lock", "show", "k"); !strings.Contains(out, "token:     3") {
		t.Errorf("token after a release by name and a new run:\n%s", out)
	}
}

// A record being created on a store without transactions (pending: no
// token yet) is shown as such, not as a holding of token 0.
func TestLockShowPendingRecord(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "k", `{"holder":"h@a","nonce":"n1","token":0,"released":false,"pending":true,"ttl_ms":15000,"ttl_ns":15000000000,"acquired":"2026-12-03T10:00:00Z","renewed":"2026-12-03T10:00:00Z"}`)
	out := c.ok("lock", "show", "k")
	for _, want := range []string{"state:     being created", "token:     none yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("lock show of a pending record lacks %q:\n%s", want, out)
		}
	}
	if out := c.ok("lock", "list", ""); !strings.Contains(out, "being created") {
		t.Errorf("lock list of a pending record:\n%s", out)
	}
}

func TestLockUsageErrors(t *testing.T) {
	c := newCLI(t)
	c.fails(2, "KEY -- CMD", "lock", "run", "k")
	c.fails(2, "KEY -- CMD", "lock", "run", "k", "true")
	c.fails(2, "--grace 4s", "lock", "run", "--ttl", "10s", "--grace", "4s", "k", "--", "true")
	c.fails(2, "TTL", "lock", "run", "--ttl", "1ms", "k", "--", "true")
	c.fails(2, "negative", "lock", "run", "--wait", "-1s", "k", "--", "true")
	c.fails(2, "invalid key", "lock", "show", "a//b")
	c.fails(2, "exactly one", "lock", "release", "k")
	c.fails(2, "exactly one", "lock", "release", "--force", "--holder", "x", "k")
	c.fails(2, "unknown subcommand", "lock", "frob")
	if out := c.ok("lock", "run", "--help"); !strings.Contains(out, "--child-exit-code") || !strings.Contains(out, "Exit codes") {
		t.Errorf("lock run --help lacks the flags or exit codes:\n%s", out)
	}
}

// lock run's CMD gets the command's stdin, stdout, stderr and environment
// from env, not from the process, so lock run runs in-process like every
// other command.
func TestLockRunChildUsesEnv(t *testing.T) {
	c := newCLI(t)
	c.env["LATCHKEY_WIRING_MARK"] = "m1"
	o := c.runIn("in-data\n", "lock", "run", "k", "--", "sh", "-c",
		`read l; echo "out:$l:$LATCHKEY_WIRING_MARK:$LATCHKEY_LOCK_HELD:$LATCHKEY_FENCING_TOKEN"; echo err >&2`)
	if o.code != 0 || o.stdout != "out:in-data:m1:1:1\n" || o.stderr != "err\n" {
		t.Fatalf("lock run: exit %d, stdout %q, stderr %q; want 0, %q and %q", o.code, o.stdout, o.stderr, "out:in-data:m1:1:1\n", "err\n")
	}
}
