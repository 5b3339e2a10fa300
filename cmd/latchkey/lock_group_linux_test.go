//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A forced release while CMD runs: CMD's leader exits on SIGTERM, but a
// process it started ignores SIGTERM and keeps writing. lock run kills
// the whole process group (SIGKILL after the grace, though the leader is
// gone), and the next holder, which must wait a TTL after a forced
// release, starts only after the last write of the old group.
func TestLockRunForcedReleaseKillsWholeGroupBeforeNextHolder(t *testing.T) {
	t.Parallel() // mostly waits out a TTL
	c := newCLI(t)
	dir := t.TempDir()
	log, pidFile := filepath.Join(dir, "log"), filepath.Join(dir, "pid")
	done := make(chan outcome)
	go func() {
		done <- c.run("lock", "run", "--ttl", "2s", "--grace", "300ms", "k", "--", "sh", "-c",
			fmt.Sprintf(`sh -c 'trap "" TERM; while :; do echo old >> %s; sleep 0.02; done' & echo $! > %s; wait`, log, pidFile))
	}()
	grandchild := waitPID(t, pidFile)
	defer syscall.Kill(grandchild, syscall.SIGKILL)
	c.ok("lock", "release", "--force", "k")
	next := c.run("lock", "run", "k", "--", "sh", "-c", fmt.Sprintf(`echo new >> %s`, log))
	if next.code != 0 {
		t.Fatalf("next holder: exit %d, %q", next.code, next.stderr)
	}
	// Messages built from parts say each part once.
	if !strings.Contains(next.stderr, "released by force by ") || strings.Contains(next.stderr, "by released by") {
		t.Errorf("next holder's wait message %q: want \"released by force by HOST:PID (--force)\", once", next.stderr)
	}
	o := <-done
	if o.code != 1 || !strings.Contains(o.stderr, "lost") {
		t.Errorf("old holder: exit %d, stderr %q; want 1, lost", o.code, o.stderr)
	}
	lines := readLines(t, log)
	i := slices.Index(lines, "new")
	if i < 0 || i != len(lines)-1 || i == 0 {
		t.Fatalf("log has %d lines, \"new\" at %d: the old group wrote after the next holder started (or never ran)", len(lines), i)
	}
	if !eventually(5*time.Second, func() bool { return !alive(grandchild) }) {
		t.Errorf("the TERM-ignoring grandchild %d is still alive after its lock run exited", grandchild)
	}
}

// CMD exits normally and leaves a process behind in its group: lock run
// kills it before it releases the lock.
func TestLockRunKillsGroupLeftByCMD(t *testing.T) {
	c := newCLI(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	c.ok("lock", "run", "k", "--", "sh", "-c", fmt.Sprintf(`sleep 30 & echo $! > %s`, pidFile))
	pid := waitPID(t, pidFile)
	defer syscall.Kill(pid, syscall.SIGKILL)
	// SIGKILL was sent before lock run returned; the kernel ends the
	// process asynchronously, so give it a moment.
	if !eventually(5*time.Second, func() bool { return !alive(pid) }) {
		t.Fatalf("the process CMD left in its group (%d) is alive 5s after lock run exited", pid)
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting for a parent that does not reap it counts as exited).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}
