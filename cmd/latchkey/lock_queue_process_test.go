package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/storeurl"
)

// Five lock run processes arrive one after another while a sixth holds
// the lock; they hold it in the order they arrived, and lock show lists
// them in that order while they wait.
func TestLockRunProcessesServedInArrivalOrder(t *testing.T) {
	dir := t.TempDir()
	url := storeurl.FileURL(filepath.Join(dir, "store"))
	log, gate := filepath.Join(dir, "log"), filepath.Join(dir, "go")
	run := func(name, script string) *sync.WaitGroup {
		var wg sync.WaitGroup
		wg.Go(func() {
			cmd := binary(t, "lock", "run", "--store", url, "--ttl", "3s", "--holder", name, "jobs/q", "--", "sh", "-c", script)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("lock run %s: %v: %s", name, err, out)
			}
		})
		return &wg
	}
	first := run("first", fmt.Sprintf(`echo first >> %s; while [ ! -e %s ]; do sleep 0.05; done`, log, gate))
	waitFor(t, func() bool { return len(readLines(t, log)) == 1 }, "the first holder to start")
	var want []string
	var all []*sync.WaitGroup
	for i := range 5 {
		name := fmt.Sprintf("w%d", i)
		all = append(all, run(name, fmt.Sprintf(`echo %s >> %s`, name, log)))
		want = append(want, name)
		waitFor(t, func() bool { return slices.Equal(queued(t, url, "jobs/q"), want) }, name+" to take its place in the queue")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	for _, wg := range all {
		wg.Wait()
	}
	if got := readLines(t, log); !slices.Equal(got, append([]string{"first"}, want...)) {
		t.Errorf("holders in order %v, want first then the arrival order %v", got, want)
	}
	if q := queued(t, url, "jobs/q"); len(q) != 0 {
		t.Errorf("queue after all ran: %v, want empty", q)
	}
}

// queued returns the waiters of the lock at key, in order, as lock show
// --json prints them.
func queued(t *testing.T, url, key string) []string {
	t.Helper()
	out, err := binary(t, "lock", "show", "--json", "--store", url, key).Output()
	if err != nil {
		t.Fatalf("lock show: %v", err)
	}
	var r showRecord
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("lock show --json %q: %v", out, err)
	}
	var names []string
	for i, w := range r.Queue {
		if w.Position != i+1 || w.Since.IsZero() {
			t.Fatalf("lock show --json queue %+v: want positions from 1 and a time since", r.Queue)
		}
		names = append(names, w.Holder)
	}
	return names
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	if !eventually(20*time.Second, ok) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
