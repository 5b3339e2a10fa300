//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/filestore"
	"github.com/latchkey/latchkey/store/storeurl"
)

// SIGKILL of the holding lock run kills its child (parent-death signal),
// and a waiting contender takes over only after the holder's last write
// stayed unchanged for a full TTL.
func TestLockRunKilledHolder(t *testing.T) {
	t.Parallel() // mostly waits out TTLs
	const ttl = 2 * time.Second
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	url := storeurl.FileURL(storeDir)
	file, pidFile := filepath.Join(dir, "log"), filepath.Join(dir, "pid")
	aStart := time.Now()
	a := binary(t, "lock", "run", "--store", url, "--ttl", ttl.String(), "jobs/one", "--",
		"sh", "-c", fmt.Sprintf(`echo "start $LATCHKEY_FENCING_TOKEN" >> %s; echo $$ > %s.tmp; mv %[2]s.tmp %[2]s; exec sleep 60`, file, pidFile))
	aOut := startCombined(t, a)
	childPID := waitPID(t, pidFile)
	defer syscall.Kill(childPID, syscall.SIGKILL)
	unchanged := watchRecord(t, storeDir, "jobs/one", aStart)

	b := binary(t, append([]string{"lock", "run", "--store", url, "--ttl", ttl.String(), "jobs/one", "--"}, appendLines(file, "0")...)...)
	bOut := startCombined(t, b)
	time.Sleep(ttl / 2) // b is waiting now; a renews
	if lines := readLines(t, file); len(lines) != 1 {
		// Only correct if a's renews were starved for its whole validity
		// on a loaded machine: it then lost the lock, killed its child and
		// released, and says so.
		a.Wait()
		if !strings.Contains(aOut.String(), "lost") {
			t.Fatalf("the contender ran while the holder was alive: %q; holder said %q", lines, aOut)
		}
		t.Logf("the holder lost its lock to scheduling delays before it was killed: %s", aOut)
		b.Wait()
		<-unchanged
		return
	}

	killed := time.Now()
	a.Process.Signal(syscall.SIGKILL)
	a.Wait()
	if !eventually(5*time.Second, func() bool { return syscall.Kill(childPID, 0) != nil }) {
		t.Fatalf("child %d still alive 5s after its lock run was killed", childPID)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("contender: %v: %s", err, bOut)
	}
	lines := readLines(t, file)
	if len(lines) != 3 || lines[0] != "start 1" || lines[1] != "start 2 1" || lines[2] != "end 2" {
		t.Fatalf("log %q, want the killed holder's start 1, then the contender's token 2", lines)
	}
	// The record's last version before the takeover (a's last renew)
	// stayed unchanged at most this long; b must have seen it unchanged
	// for a full TTL on its own clock, which can only be shorter.
	d := <-unchanged
	if d < ttl {
		t.Errorf("the contender took over when the holder's last write was at most %v old; want a full TTL (%v)", d, ttl)
	}
	t.Logf("contender took over %v after SIGKILL; the holder's last write was at most %v old (TTL %v)",
		time.Since(killed), d, ttl)
}

// watchRecord polls the lease record at key in the directory store at
// dir until its token goes above 1, and then sends an upper bound on how
// long the version before that had stayed unchanged: from the start of
// the last read that still saw the version before it (or from notBefore,
// a time before the record was first written) to the end of the read that
// saw the takeover.
func watchRecord(t *testing.T, dir, key string, notBefore time.Time) <-chan time.Duration {
	t.Helper()
	s, err := filestore.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan time.Duration, 1)
	go func() {
		defer s.Close()
		var cur store.Version
		prevSeen := notBefore // start of the last read that saw the version before cur
		lastSeen := notBefore // start of the last read that saw cur
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			start := time.Now()
			rec, v, err := lease.Inspect(context.Background(), s, key)
			if err != nil {
				continue
			}
			if rec.Token > 1 {
				out <- time.Since(prevSeen)
				return
			}
			if v != cur {
				cur, prevSeen = v, lastSeen
			}
			lastSeen = start
		}
		out <- 0
	}()
	return out
}

// A lock lost while CMD ignores SIGTERM: CMD gets SIGKILL after --grace
// and lock run exits 1.
func TestLockRunLostKillsStubbornChild(t *testing.T) {
	t.Parallel() // waits out a TTL after the forced release
	c := newCLI(t)
	done := make(chan outcome)
	go func() {
		done <- c.run("lock", "run", "--ttl", "2s", "--grace", "300ms", "k", "--", "sh", "-c", `trap "" TERM; sleep 30`)
	}()
	for !strings.Contains(c.run("lock", "show", "k").stdout, "state:     held") {
		time.Sleep(10 * time.Millisecond)
	}
	c.ok("lock", "release", "--force", "k")
	select {
	case o := <-done:
		if o.code != 1 || !strings.Contains(o.stderr, "SIGKILL in 300ms") || !strings.Contains(o.stderr, "terminated") {
			t.Errorf("exit %d, stderr %q; want 1, lost, terminated", o.code, o.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("lock run still running 20s after its lock was released: the child was not killed")
	}
	// The forced release kept the token: the next holder gets a higher one.
	var rec struct {
		Holder   string `json:"holder"`
		Token    int    `json:"token"`
		Released bool   `json:"released"`
		Forced   bool   `json:"forced"`
		State    string `json:"state"`
	}
	if err := json.Unmarshal([]byte(c.ok("lock", "show", "--json", "k")), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Token != 1 || rec.Released || !rec.Forced || rec.State != "released by force" || !strings.Contains(rec.Holder, "--force") {
		t.Errorf("record after release --force: %+v; want token 1 kept, released by force, by --force", rec)
	}
	c.ok("lock", "run", "k", "--", "sh", "-c", `test "$LATCHKEY_FENCING_TOKEN" = 2`)
}

// A CMD that runs for several TTLs keeps the lock: lock run renews it, and
// a waiting contender starts only after CMD has ended.
func TestLockRunRenewsWhileCMDRuns(t *testing.T) {
	t.Parallel() // mostly waits out TTLs
	const ttl = 2 * time.Second
	dir := t.TempDir()
	url := storeurl.FileURL(filepath.Join(dir, "store"))
	file := filepath.Join(dir, "log")
	a := binary(t, append([]string{"lock", "run", "--store", url, "--ttl", ttl.String(), "k", "--"}, appendLines(file, "5")...)...)
	aOut := startCombined(t, a)
	if !waitLines(t, file, 10*time.Second) {
		t.Fatal("CMD never started")
	}
	b := binary(t, append([]string{"lock", "run", "--store", url, "--ttl", ttl.String(), "k", "--"}, appendLines(file, "0")...)...)
	bOut, bErr := b.CombinedOutput()
	aErr := a.Wait()
	lines := readLines(t, file)
	if bErr != nil {
		// Only correct if a loaded machine starved the contender's renews
		// for its whole validity once it held the lock: the holder's CMD
		// still ended before the contender's started.
		if !strings.Contains(string(bOut), "lost") || aErr != nil || len(lines) < 3 || lines[0] != "start 1 1" || lines[1] != "end 1" || lines[2] != "start 2 1" {
			t.Fatalf("contender: %v: %s; holder: %v; log %q", bErr, bOut, aErr, lines)
		}
		t.Logf("the contender lost its lock to scheduling delays: %s", bOut)
		return
	}
	if aErr != nil {
		// Only correct if a loaded machine starved a's renews for its
		// whole validity: then a's CMD was killed before b could start.
		if !strings.Contains(aOut.String(), "lost") || len(lines) != 3 || lines[1] != "start 2 1" {
			t.Fatalf("holder: %v: %s; log %q", aErr, aOut, lines)
		}
		t.Logf("the holder lost its lock to scheduling delays: %s", aOut)
		return
	}
	if want := []string{"start 1 1", "end 1", "start 2 1", "end 2"}; !slices.Equal(lines, want) {
		t.Fatalf("log %q, want %q: the contender must wait for the renewing holder's CMD to end", lines, want)
	}
}

// SIGTERM and SIGINT to lock run reach CMD exactly once, and CMD exits on
// its own terms; lock run passes its status on and releases the lock.
func TestLockRunForwardsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			url := storeurl.FileURL(filepath.Join(dir, "store"))
			file := filepath.Join(dir, "log")
			cmd := binary(t, "lock", "run", "--store", url, "--child-exit-code", "k", "--", "sh", "-c",
				fmt.Sprintf(`trap 'echo term >> %[1]s; n=1' TERM; trap 'echo int >> %[1]s; n=1' INT; echo ready >> %[1]s; while [ -z "$n" ]; do sleep 0.05; done; sleep 0.3; exit 5`, file))
			startProcess(t, cmd)
			if !waitLines(t, file, 10*time.Second) {
				t.Fatal("CMD never started")
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 5 {
				t.Fatalf("lock run after %v: %v (exit %d), want CMD's exit 5", sig, err, code)
			}
			want := map[syscall.Signal]string{syscall.SIGTERM: "term", syscall.SIGINT: "int"}[sig]
			if lines := readLines(t, file); len(lines) != 2 || lines[1] != want {
				t.Fatalf("CMD's log %q: want ready, then one %s", lines, want)
			}
			out, err := binary(t, "lock", "show", "--store", url, "k").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "state:     released") {
				t.Fatalf("lock show after the run: %v\n%s", err, out)
			}
		})
	}
}
