package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/store/storeurl"
)

// incr is a shell filter adding one to a decimal number (empty = 0).
var incr = []string{"sh", "-c", `n=$(cat); echo $(( ${n:-0} + 1 ))`}

func TestKVUpdate(t *testing.T) {
	c := newCLI(t)
	for _, want := range []string{"1", "2", "3"} {
		if got := c.ok(append([]string{"kv", "update", "n", "--"}, incr...)...); got != "Success! Data written to: n\n" {
			t.Fatalf("update printed %q", got)
		}
		if got := c.ok("kv", "get", "n"); got != want+"\n" {
			t.Fatalf("n = %q, want %s and echo's newline", got, want)
		}
	}
	// Without "--" the command starts at the second argument.
	c.ok("kv", "update", "n", "sh", "-c", "echo reset")
	if got := c.ok("kv", "get", "n"); got != "reset\n" {
		t.Fatalf("n = %q after update without --", got)
	}
	// CMD's stdout is written exactly: no newline added, none trimmed.
	c.ok("kv", "update", "n", "--", "printf", "x\\000y")
	if got := c.ok("kv", "get", "n"); got != "x\x00y" {
		t.Fatalf("n = %q after printf, want exactly its bytes", got)
	}
}

func TestKVUpdateCommandFailurePassesThrough(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "k", "before")
	o := c.fails(3, "nothing written", "kv", "update", "k", "--", "sh", "-c", "cat >/dev/null; echo partial; exit 3")
	if o.stdout != "" {
		t.Fatalf("stdout %q, want nothing", o.stdout)
	}
	if got := c.ok("kv", "get", "k"); got != "before" {
		t.Fatalf("k = %q after a failed command, want it untouched", got)
	}
	c.fails(1, "nothing written", "kv", "update", "k", "--", "/nonexistent/command")
}

// Every run of CMD also writes the key from another process, so every
// check-and-set loses: the update gives up after exactly -max-attempts.
func TestKVUpdateGivesUpWhenContended(t *testing.T) {
	c := newCLI(t)
	exe := testBinary(t)
	t.Setenv(asMain, "1") // for the inner latchkey run by CMD
	t.Setenv(storeEnv, c.env[storeEnv])
	interferer := `"$0" kv put k other >/dev/null && cat`
	o := c.fails(1, "kv update: gave up: k too contended after 3 attempts",
		"kv", "update", "-max-attempts", "3", "k", "--", "sh", "-c", interferer, exe)
	if o.stdout != "" {
		t.Fatalf("stdout %q", o.stdout)
	}
	if got := c.ok("kv", "get", "k"); got != "other" {
		t.Fatalf("k = %q, want the interferer's value", got)
	}
}

// By default a contended update is bounded by time, not by 10 attempts:
// with every attempt lost, it keeps going for -max-time.
func TestKVUpdateDefaultIsATimeBudget(t *testing.T) {
	c := newCLI(t)
	exe := testBinary(t)
	t.Setenv(asMain, "1")
	t.Setenv(storeEnv, c.env[storeEnv])
	o := c.fails(1, "kv update: gave up: k too contended after",
		"kv", "update", "-max-time", "1500ms", "k", "--", "sh", "-c", `"$0" kv put k other >/dev/null && cat`, exe)
	if !regexp.MustCompile(`after \d+ attempts in 1.5s \(-max-time\)`).MatchString(o.stderr) {
		t.Fatalf("stderr %q: want the time budget, not a count, to end it", o.stderr)
	}
	c.fails(2, "-max-time 0s", "kv", "update", "-max-time", "0", "k", "--", "cat")
}

// Several OS processes run kv update on one key of a directory store at
// once; no increment may be lost.
func TestKVUpdateAcrossProcesses(t *testing.T) {
	const procs, each = 8, 5
	url := storeurl.FileURL(filepath.Join(t.TempDir(), "store"))
	var wg sync.WaitGroup
	errs := make(chan string, procs*each)
	for range procs {
		wg.Go(func() {
			for range each {
				cmd := binary(t, append([]string{"kv", "--store", url, "update", "counter", "--"}, incr...)...)
				if out, err := cmd.CombinedOutput(); err != nil {
					errs <- err.Error() + ": " + string(out)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	out, err := binary(t, "kv", "--store", url, "get", "counter").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != strconv.Itoa(procs*each) {
		t.Fatalf("counter = %q, want %d", got, procs*each)
	}
}
