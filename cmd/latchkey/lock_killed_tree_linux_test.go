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

	"github.com/latchkey/latchkey/store/storeurl"
)

// kill -9 of a holding lock run whose CMD started a background process and
// a process that left CMD's session (setsid) and ignores SIGTERM: every
// process of the first tree is dead when the waiting lock run starts its
// CMD (which looks for them in /proc), and in fact well before.
func TestLockRunKilledLeavesNoProcessOfItsTree(t *testing.T) {
	t.Parallel() // mostly waits out a TTL
	const ttl = 2 * time.Second
	dir := t.TempDir()
	url := storeurl.FileURL(filepath.Join(dir, "store"))
	log, states := filepath.Join(dir, "log"), filepath.Join(dir, "states")
	pidFile := func(i int) string { return filepath.Join(dir, fmt.Sprintf("pid%d", i)) }
	// Each pid file is written whole (mv), as waitPID reads it at once.
	cmd := fmt.Sprintf(`echo $$ > %[1]s.t; mv %[1]s.t %[1]s
sleep 60 & echo $! > %[2]s.t; mv %[2]s.t %[2]s
setsid sh -c 'trap "" TERM; echo $$ > %[3]s.t; mv %[3]s.t %[3]s; while :; do echo old >> %[4]s; sleep 0.02; done' &
wait`, pidFile(0), pidFile(1), pidFile(2), log)
	a := binary(t, "lock", "run", "--store", url, "--ttl", ttl.String(), "k", "--", "sh", "-c", cmd)
	// Files, not pipes: a process of a's tree that survives would hold a
	// pipe open, and Wait would wait for it.
	aOut := outFile(t, filepath.Join(dir, "a.out"))
	a.Stdout, a.Stderr = aOut, aOut
	startProcess(t, a)
	var pids []int
	for i := range 3 {
		pid := waitPID(t, pidFile(i))
		defer syscall.Kill(pid, syscall.SIGKILL)
		pids = append(pids, pid)
	}

	// The second CMD records, first thing, the state of each process of
	// the first tree ("gone", or its /proc state letter), then says "new".
	var check strings.Builder
	for _, p := range pids {
		fmt.Fprintf(&check, `s=$(sed 's/.*) //' /proc/%d/stat 2>/dev/null | cut -d' ' -f1); echo "%[1]d ${s:-gone}" >> %s; `, p, states)
	}
	check.WriteString("echo new >> " + log)
	b := binary(t, "lock", "run", "--store", url, "--ttl", ttl.String(), "k", "--", "sh", "-c", check.String())
	bOut := outFile(t, filepath.Join(dir, "b.out"))
	b.Stdout, b.Stderr = bOut, bOut
	startProcess(t, b)
	time.Sleep(200 * time.Millisecond) // b waits for the lock now

	killed := time.Now()
	a.Process.Signal(syscall.SIGKILL)
	a.Wait()
	var dead time.Duration
	for deadline := killed.Add(ttl); ; time.Sleep(2 * time.Millisecond) {
		if !slices.ContainsFunc(pids, alive) {
			dead = time.Since(killed)
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of the killed lock run's tree alive a TTL (%v) after kill -9: %v", ttl, slices.DeleteFunc(slices.Clone(pids), func(p int) bool { return !alive(p) }))
			break
		}
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("the second lock run: %v: %q", err, readLines(t, bOut.Name()))
	}
	for _, l := range readLines(t, states) {
		if f := strings.Fields(l); len(f) != 2 || f[1] != "gone" && f[1] != "Z" {
			t.Errorf("when the second CMD started, the first tree's process %s", l)
		}
	}
	if lines := readLines(t, log); len(lines) < 2 || lines[0] != "old" || lines[len(lines)-1] != "new" {
		t.Errorf("log ends %q: the TERM-ignoring grandchild wrote after the second CMD started (or never ran)", lines[max(0, len(lines)-3):])
	}
	t.Logf("the first tree was dead %v after kill -9 of its lock run; TTL %v", dead, ttl)
}

// outFile creates name for a process's output.
func outFile(t *testing.T, name string) *os.File {
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
