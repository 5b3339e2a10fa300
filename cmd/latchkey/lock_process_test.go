package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/storeurl"
)

// appendLines is a CMD that appends "start TOKEN" and, after a pause,
// "end TOKEN" to a file, with the time in nanoseconds.
func appendLines(file string, pause string) []string {
	return []string{"sh", "-c", fmt.Sprintf(
		`echo "start $LATCHKEY_FENCING_TOKEN $LATCHKEY_LOCK_HELD" >> %[1]s; sleep %[2]s; echo "end $LATCHKEY_FENCING_TOKEN" >> %[1]s`,
		file, pause)}
}

// Six processes run lock run on one key at once; their children's start
// and end lines never interleave and the tokens strictly increase.
func TestLockRunProcessesNeverOverlap(t *testing.T) {
	const procs = 6
	dir := t.TempDir()
	url := storeurl.FileURL(filepath.Join(dir, "store"))
	file := filepath.Join(dir, "log")
	var wg sync.WaitGroup
	for range procs {
		wg.Go(func() {
			// A TTL far above any scheduling delay: a holder starved of
			// renews for its whole validity would lose the lock and
			// correctly kill its CMD mid-run, which this test does not
			// expect. Handoffs go by release, so the TTL costs no time.
			cmd := binary(t, append([]string{"lock", "run", "--store", url, "--ttl", "10s", "jobs/one", "--"}, appendLines(file, "0.05")...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("lock run: %v: %s", err, out)
			}
		})
	}
	wg.Wait()
	lines := readLines(t, file)
	if len(lines) != 2*procs {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 2*procs, strings.Join(lines, "\n"))
	}
	last := 0
	for i := 0; i < len(lines); i += 2 {
		var tok, tok2, held int
		if _, err := fmt.Sscanf(lines[i], "start %d %d", &tok, &held); err != nil || held != 1 {
			t.Fatalf("line %d %q: want start TOKEN 1", i, lines[i])
		}
		if _, err := fmt.Sscanf(lines[i+1], "end %d", &tok2); err != nil || tok2 != tok {
			t.Fatalf("line %d %q: want end %d (lines interleave)", i+1, lines[i+1], tok)
		}
		if tok <= last {
			t.Fatalf("token %d after %d", tok, last)
		}
		last = tok
	}
}

func waitPID(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if err == nil && strings.HasSuffix(string(b), "\n") { // written whole
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder's child never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLines waits up to d for file to have a line; it reports whether it
// has.
func waitLines(t testing.TB, file string, d time.Duration) bool {
	t.Helper()
	return eventually(d, func() bool { return len(readLines(t, file)) > 0 })
}

func readLines(t testing.TB, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}
