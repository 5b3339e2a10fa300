package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
)

// A publisher killed with SIGKILL in the middle of writing its objects
// leaves an abandoned generation: never visible to readers, and removed by
// GC once the grace period has passed.
func TestPublishKilledMidway(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	inDir(t, src)
	writeFiles(t, src, map[string]string{"a.txt": "committed"})
	first := strings.TrimSpace(c.ok("publish", "--prefix", "p", "a.txt"))

	// The second publisher streams b.fifo, which we feed slowly and never
	// finish: it is killed while the object is being written.
	if err := syscall.Mkfifo(filepath.Join(src, "b.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, src, map[string]string{"a.txt": "never visible"})
	cmd := binary(t, "publish", "--store", c.env[storeEnv], "--prefix", "p", "a.txt", "b.fifo")
	cmd.Dir = src
	startProcess(t, cmd)
	fifo, err := os.OpenFile(filepath.Join(src, "b.fifo"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fifo.Write([]byte("partial body")); err != nil {
		t.Fatal(err)
	}
	// a.txt of the new generation is stored before b.fifo is read.
	if !eventually(10*time.Second, func() bool { return c.ok("kv", "list", "p/gen/") != c.ok("kv", "list", "p/gen/"+first+"/") }) {
		t.Fatal("the second publisher wrote nothing in 10s")
	}
	cmd.Process.Kill()
	cmd.Wait()
	fifo.Close()

	out := filepath.Join(t.TempDir(), "out")
	if got := strings.TrimSpace(c.ok("snapshot", "get", "--prefix", "p", "--out", out)); got != first {
		t.Fatalf("snapshot after the kill is %q, want the first generation %q", got, first)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "a.txt")); string(b) != "committed" {
		t.Fatalf("a.txt = %q: a half-written generation is visible", b)
	}
	if outp := c.ok("gc", "--prefix", "p", "--grace", "1h"); !strings.Contains(outp, "kept 1") {
		t.Fatalf("gc within the grace: %q", outp)
	}
	if outp := c.ok("gc", "--prefix", "p", "--grace", "1ns"); !strings.Contains(outp, "deleted 1 generations") {
		t.Fatalf("gc after the grace: %q", outp)
	}
	if rest, want := c.ok("kv", "list", "p/gen/"), c.ok("kv", "list", "p/gen/"+first+"/"); rest != want {
		t.Fatalf("after gc: %q, want only the first generation's %q", rest, want)
	}
}

// Ctrl-C during publish says it was interrupted (not a store failure),
// how far it got and that nothing was committed, deletes what it staged,
// and exits 130 as latchkey help exit-codes says.
func TestPublishInterrupted(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	inDir(t, src)
	writeFiles(t, src, map[string]string{"a.txt": "committed", "c.txt": "never"})
	first := strings.TrimSpace(c.ok("publish", "--prefix", "p", "a.txt"))
	if err := syscall.Mkfifo(filepath.Join(src, "b.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := binary(t, "publish", "--store", c.env[storeEnv], "--prefix", "p", "a.txt", "b.fifo", "c.txt")
	cmd.Dir = src
	var errb testutil.LockedBuffer
	cmd.Stderr = &errb
	startProcess(t, cmd)
	fifo, err := os.OpenFile(filepath.Join(src, "b.fifo"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fifo.Write([]byte("partial body"))
	if !eventually(10*time.Second, func() bool { return c.ok("kv", "list", "p/gen/") != c.ok("kv", "list", "p/gen/"+first+"/") }) {
		t.Fatal("the publisher wrote nothing in 10s")
	}
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(100 * time.Millisecond)
	fifo.Close() // the read of b.fifo ends, interrupted or not
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	want := "latchkey: publish p: interrupted by SIGINT after 1 of 3 objects; nothing committed, readers still see the current generation; staged objects deleted\n"
	if code != 130 || errb.String() != want {
		t.Fatalf("publish interrupted: %v (exit %d), stderr %q; want exit 130 and %q", err, code, errb.String(), want)
	}
	if got := c.ok("kv", "list", "p/gen/"); got != c.ok("kv", "list", "p/gen/"+first+"/") {
		t.Fatalf("objects left under p/gen/ besides the first generation's:\n%s", got)
	}
	if got := strings.TrimSpace(c.ok("publish", "current", "--prefix", "p")); !strings.Contains(got, first) {
		t.Fatalf("publish current = %q, want %s", got, first)
	}
}
