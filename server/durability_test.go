package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/internal/crashtest"
)

// The durability test runs the server as a real OS process: this test
// binary re-executed with childEnv set serves on 127.0.0.1:0 and prints its
// startup line, exactly as `latchkey serve` does.
const (
	childEnv     = "LATCHKEY_SERVER_TEST_CHILD"
	childDirEnv  = "LATCHKEY_SERVER_TEST_DIR"
	childAnonEnv = "LATCHKEY_SERVER_TEST_ANON" // "1": serve unsigned S3 requests
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "serve" {
		err := server.Run(context.Background(), server.Config{
			DataDir: os.Getenv(childDirEnv), Listen: "127.0.0.1:0", Anonymous: os.Getenv(childAnonEnv) == "1",
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		}, os.Stdout)
		fmt.Fprintln(os.Stderr, "child server:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// serverProcess starts a server process on dir and returns its URL.
func serverProcess(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	p := crashtest.Start(t, testutil.Child(childEnv+"=serve", childDirEnv+"="+dir))
	return p.Cmd, p.URL
}

// casAck is an acknowledged counter write: cas=from succeeded with value.
// Successful CASes on one key form a chain of strictly increasing from.
type casAck struct {
	from  uint64
	value string
}

type kvEntry struct {
	Key         string
	Value       []byte
	ModifyIndex uint64
}

// outcomes of the load, recorded only when the server answered.
type outcomes struct {
	mu       sync.Mutex
	acked    map[string]string // key → value, cas=0 puts answered true
	casAcked []casAck          // counter writes answered true
	refused  map[string]bool   // counter values answered false
	maxIndex uint64            // the highest X-Consul-Index seen
}

func (o *outcomes) seeIndex(h http.Header) {
	if n, err := strconv.ParseUint(h.Get("X-Consul-Index"), 10, 64); err == nil {
		o.mu.Lock()
		o.maxIndex = max(o.maxIndex, n)
		o.mu.Unlock()
	}
}

// put sends PUT url body and returns the true/false answer; ok is false
// when the outcome is unknown (the connection broke).
func put(c *http.Client, url, body string) (applied, ok bool) {
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		return false, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		return false, false
	}
	return strings.TrimSpace(string(b)) == "true", true
}

// load runs distinct-key cas=0 writers and counter CAS writers until stop.
func load(base string, o *outcomes, stop *atomic.Bool, wg *sync.WaitGroup, round int) {
	c := &http.Client{Timeout: 10 * time.Second}
	for w := range 8 {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				key := fmt.Sprintf("d/%d/%d/%d", round, w, n)
				val := "v-" + key
				if applied, ok := put(c, base+"/v1/kv/"+key+"?cas=0", val); ok && applied {
					o.mu.Lock()
					o.acked[key] = val
					o.mu.Unlock()
				} else if !ok {
					return
				}
			}
		})
	}
	for w := range 8 {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				resp, err := c.Get(base + "/v1/kv/c")
				if err != nil {
					return
				}
				o.seeIndex(resp.Header)
				var cur []kvEntry
				json.NewDecoder(resp.Body).Decode(&cur)
				resp.Body.Close()
				idx := uint64(0)
				if len(cur) == 1 {
					idx = cur[0].ModifyIndex
				}
				val := fmt.Sprintf("c-%d-%d-%d", round, w, n)
				applied, ok := put(c, fmt.Sprintf("%s/v1/kv/c?cas=%d", base, idx), val)
				if !ok {
					return
				}
				o.mu.Lock()
				if applied {
					o.casAcked = append(o.casAcked, casAck{idx, val})
				} else {
					o.refused[val] = true
				}
				o.mu.Unlock()
			}
		})
	}
}

// Kill the server process with SIGKILL in the middle of a concurrent write
// load, restart it on the same directory, and check that every write it
// acknowledged is there with its value, no refused write is, and the index
// has not gone backwards. Two rounds on one directory.
func TestDurabilityUnderSIGKILL(t *testing.T) {
	dir := t.TempDir()
	o := &outcomes{acked: map[string]string{}, refused: map[string]bool{}}
	cmd, base := serverProcess(t, dir)
	for round := range 2 {
		var stop atomic.Bool
		var wg sync.WaitGroup
		load(base, o, &stop, &wg, round)
		deadline := time.Now().Add(30 * time.Second)
		for {
			o.mu.Lock()
			n := len(o.acked) + len(o.casAcked)
			o.mu.Unlock()
			if n >= 300*(round+1) || time.Now().After(deadline) {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL) // load still running: some requests die in flight
		cmd.Wait()
		stop.Store(true)
		wg.Wait()

		cmd, base = serverProcess(t, dir)
		check(t, base, o)
		t.Logf("round %d: %d puts and %d CAS acknowledged, %d CAS refused, max index seen %d",
			round, len(o.acked), len(o.casAcked), len(o.refused), o.maxIndex)
	}
}

func check(t *testing.T, base string, o *outcomes) {
	t.Helper()
	resp, err := http.Get(base + "/v1/kv/?recurse")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	idx, _ := strconv.ParseUint(resp.Header.Get("X-Consul-Index"), 10, 64)
	if idx < o.maxIndex {
		t.Fatalf("X-Consul-Index went backwards across the crash: %d < %d", idx, o.maxIndex)
	}
	var all []kvEntry
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		t.Fatal(err)
	}
	got := map[string]kvEntry{}
	for _, e := range all {
		got[e.Key] = e
	}
	if len(o.acked) == 0 || len(o.casAcked) == 0 {
		t.Fatalf("load acknowledged nothing (%d puts, %d CAS)", len(o.acked), len(o.casAcked))
	}
	for k, v := range o.acked {
		if e, ok := got[k]; !ok || string(e.Value) != v {
			t.Errorf("acknowledged %s=%q lost (present %v, value %q)", k, v, ok, e.Value)
		}
	}
	c, ok := got["c"]
	if !ok {
		t.Fatal("counter lost")
	}
	if o.refused[string(c.Value)] {
		t.Errorf("counter holds the refused value %q", c.Value)
	}
	// The counter's value is the last acknowledged CAS or a later one whose
	// answer was lost in the crash, never an earlier one.
	last := o.casAcked[0]
	for _, a := range o.casAcked {
		if a.from > last.from {
			last = a
		}
	}
	for _, a := range o.casAcked {
		if a != last && string(c.Value) == a.value {
			t.Errorf("counter went back to %q; %q was acknowledged later", a.value, last.value)
		}
	}
	o.maxIndex = max(o.maxIndex, idx)
}
