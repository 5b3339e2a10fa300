package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store/memstore"
)

// Every `latchkey bench` command docs/benchmarks.md shows parses: its flags exist
// and its key patterns and counts are accepted (running them needs an
// etcd, so they are not run here).
func TestBenchmarksPageCommandsParse(t *testing.T) {
	b, err := os.ReadFile("../../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		args, ok := strings.CutPrefix(line, "latchkey bench ")
		if !ok {
			continue
		}
		n++
		args, _, _ = strings.Cut(args, "#")
		var cfg benchConfig
		if err := benchFlags(&cfg).Parse(strings.Fields(args)); err != nil {
			t.Errorf("docs/benchmarks.md: %s: %v", line, err)
			continue
		}
		if _, err := benchScenarios(cfg.keys, cfg.clients); err != nil {
			t.Errorf("docs/benchmarks.md: %s: %v", line, err)
		}
		if _, err := benchCounts("--waiters", cfg.waiters); err != nil {
			t.Errorf("docs/benchmarks.md: %s: %v", line, err)
		}
	}
	if n < 2 {
		t.Fatalf("found %d latchkey bench commands in docs/benchmarks.md, want the table's and the lock's", n)
	}
}

// listenerPID finds the process listening on a loopback port (here, this
// one), and processCPU reads a CPU time that grows with work done.
func TestBenchProcessCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU accounting reads Linux's /proc")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if pid, ok := listenerPID(ln.Addr().String()); !ok || pid != os.Getpid() {
		t.Fatalf("listenerPID(%s) = %d, %v; want %d", ln.Addr(), pid, ok, os.Getpid())
	}
	if _, ok := listenerPID("127.0.0.1:1"); ok {
		t.Error("listenerPID found a process on a port nobody listens on")
	}
	if _, ok := listenerPID("192.0.2.1:80"); ok {
		t.Error("listenerPID claimed a process for a remote address")
	}
	c0, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until getrusage says this process used 100ms more CPU (however
	// busy the machine is); /proc must agree to within its 10ms ticks.
	s0, err := selfCPU()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if s, _ := selfCPU(); s-s0 >= 100*time.Millisecond {
			break
		}
	}
	s1, _ := selfCPU()
	c1, _ := processCPU(os.Getpid())
	if got, want := c1-c0, s1-s0; got < want-3*clockTick {
		t.Errorf("/proc counted %v of CPU where getrusage counted %v", got, want)
	}
}

// The update pattern counts: its writes are a counter, and the check
// after a run fails when the count is below the acknowledged updates (a
// lost update) or above them by more than one per client.
func TestBenchUpdateCountsItsWrites(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	for _, val := range [][]byte{[]byte("x"), bytes.Repeat([]byte("v"), 16)} {
		key := fmt.Sprintf("count-%d", len(val))
		for range 12 {
			if _, err := cas.Update(ctx, s, key, benchIncrement(val), nil); err != nil {
				t.Fatal(err)
			}
		}
		e, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := benchCount(e.Value); err != nil || n != 12 || len(e.Value) < len(val) {
			t.Fatalf("after 12 updates of a %d-byte value: %q (%d, %v)", len(val), e.Value, n, err)
		}
		for _, c := range []struct {
			acked   int64
			clients int
			ok      bool
		}{{12, 1, true}, {11, 1, true}, {10, 1, false}, {13, 1, false}, {9, 3, true}, {8, 3, false}} {
			if err := checkUpdateCount(ctx, s, key, c.acked, c.clients); (err == nil) != c.ok {
				t.Errorf("counter 12, %d acknowledged by %d clients: err = %v, want ok %v", c.acked, c.clients, err, c.ok)
			}
		}
	}
}

// Run words a bad command line as a usage *Error (the command exits 2),
// prints -h's help to Stdout, and starts nothing for either.
func TestRunUsage(t *testing.T) {
	var out strings.Builder
	e := &Env{Stdout: &out, Getenv: func(string) string { return "" }, Environ: func() []string { return nil }}
	for _, args := range [][]string{
		{"--duration", "11m"}, {"--clients", "0"}, {"--keys", "warm"}, {"--value-size", "1000000"},
		{"--http-client", "curl"}, {"--update-procs", "1,x"}, {"--queue"}, {"--frob"}, {"extra"},
	} {
		err := Run(context.Background(), e, args)
		var be *Error
		if !errors.As(err, &be) || !be.Usage || !strings.HasPrefix(be.Msg, "bench") {
			t.Errorf("bench %q: %v, want a usage *Error that names the bench", args, err)
		}
	}
	if out.Len() != 0 {
		t.Errorf("a refused command line printed %q", out.String())
	}
	if err := Run(context.Background(), e, []string{"-h"}); err != nil || !strings.HasPrefix(out.String(), "Usage: latchkey bench [flags]") || !strings.Contains(out.String(), "-update-procs counts") {
		t.Errorf("bench -h: %v, printed %q", err, out.String())
	}
}
