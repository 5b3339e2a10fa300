//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/storeurl"
)

// childrenOf lists the pids whose parent is pid, from /proc.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if parentOf(p) == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// parentOf returns pid's parent (0 when pid is gone).
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// kill -9 of latchkey bench --queue: the lock run processes it started
// die with it (they would otherwise go on waiting for the lock, and
// holding it, until their --wait ran out).
func TestBenchKilledLeavesNoChild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := storeurl.FileURL(filepath.Join(dir, "store"))
	b := binary(t, "bench", "--queue", "--store", url, "--waiters", "3", "--duration", "2m")
	out := outFile(t, filepath.Join(dir, "bench.out"))
	b.Stdout, b.Stderr = out, out
	startProcess(t, b)
	var kids []int
	if !eventually(30*time.Second, func() bool { kids = childrenOf(t, b.Process.Pid); return len(kids) >= 2 }) {
		t.Fatalf("bench --queue started %d lock run processes in 30s; want at least 2", len(kids))
	}
	for _, k := range kids {
		defer syscall.Kill(k, syscall.SIGKILL)
	}
	if err := b.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.Wait()
	for _, k := range kids {
		if !eventually(10*time.Second, func() bool { return !alive(k) }) {
			t.Fatalf("child %d of the killed bench still alive 10s later", k)
		}
	}
}
