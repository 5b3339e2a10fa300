package failover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The lock run workload: several loops each run the latchkey binary's
// `lock run` on one key again and again, as users run it, with a CMD
// that appends "start TOKEN", a few "beat TOKEN" lines 20 ms apart and
// "end TOKEN" to one log file (O_APPEND on one machine: the file's order
// is the order of the writes). A lock run that loses its lock kills CMD
// before anyone else can take it, so no line of an older token may follow
// the start of a newer one, and the tokens of the starts strictly
// increase.

// lockRunCmd is the CMD: its lines, then exit.
const lockRunCmd = `f=$1; echo "start $LATCHKEY_FENCING_TOKEN" >> "$f"; i=0; while [ $i -lt 5 ]; do echo "beat $LATCHKEY_FENCING_TOKEN" >> "$f"; sleep 0.02; i=$((i+1)); done; echo "end $LATCHKEY_FENCING_TOKEN" >> "$f"`

// LockRunReport is the lock run workload's account.
type LockRunReport struct {
	Runs, Failed int // lock run processes that exited 0, and otherwise
	Holdings     int // starts in the log
	Stall        map[string][]time.Duration
}

type lockRunHistory struct {
	since func() time.Duration
	log   string // the CMDs' log file

	mu      sync.Mutex
	ok      []time.Duration // exits with status 0
	failed  int
	samples map[string]string
}

// run runs `bin lock run` on key in a loop until ctx ends. storeURL is an
// etcd:// URL naming every member.
func (h *lockRunHistory) run(ctx context.Context, bin, storeURL, key string, id int) {
	for ctx.Err() == nil {
		// Each process gets 30 s, not ctx: the run's end must not kill a
		// holder mid-CMD (its lines would look like a lost lock).
		pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(pctx, bin, "lock", "run", "--store", storeURL, "--ttl", "2s", "--quiet",
			"--holder", fmt.Sprintf("p%d", id), key, "--", "sh", "-c", lockRunCmd, "sh", h.log)
		dieWithUs(cmd) // a killed test leaves no lock run (nor its CMD) behind
		out, err := cmd.CombinedOutput()
		cancel()
		now := h.since()
		h.mu.Lock()
		if err == nil {
			h.ok = append(h.ok, now)
		} else {
			h.failed++
			var ee *exec.ExitError
			kind := "lock run"
			if errors.As(err, &ee) {
				kind = fmt.Sprintf("lock run exit %d", ee.ExitCode())
			}
			if _, ok := h.samples[kind]; !ok {
				h.samples[kind] = strings.TrimSpace(string(out)) + " (" + err.Error() + ")"
			}
		}
		h.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// LockRunLine is one line of the CMDs' log.
type LockRunLine struct {
	What  string // "start", "beat", "end"
	Token uint64
}

// ReadLockRunLog parses the CMDs' log.
func ReadLockRunLog(path string) ([]LockRunLine, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ls []LockRunLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		what, tok, ok := strings.Cut(sc.Text(), " ")
		t, err := strconv.ParseUint(tok, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("failover: lock run log line %q", sc.Text())
		}
		ls = append(ls, LockRunLine{what, t})
	}
	return ls, sc.Err()
}

// CheckLockRunLog finds CMD lines of an older token after the start of a
// newer one (two CMDs ran at once), and starts whose token is not above
// the previous start's.
func CheckLockRunLog(ls []LockRunLine) []Violation {
	var vs []Violation
	var newest uint64
	for i, l := range ls {
		switch {
		case l.What == "start" && l.Token <= newest:
			vs = append(vs, Violation{"inversion", fmt.Sprintf("lock run log line %d: start of token %d after the start of token %d", i+1, l.Token, newest)})
		case l.What == "start":
			newest = l.Token
		case l.Token != newest:
			vs = append(vs, Violation{"overlap", fmt.Sprintf("lock run log line %d: %s of token %d after the start of token %d", i+1, l.What, l.Token, newest)})
		}
	}
	return vs
}

func (h *lockRunHistory) report(faults []Fault, end time.Duration) (LockRunReport, []Violation, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := LockRunReport{Runs: len(h.ok), Failed: h.failed, Stall: map[string][]time.Duration{}}
	ls, err := ReadLockRunLog(h.log)
	if err != nil {
		return r, nil, err
	}
	for _, l := range ls {
		if l.What == "start" {
			r.Holdings++
		}
	}
	addStalls(r.Stall, faults, end, h.ok)
	return r, CheckLockRunLog(ls), nil
}

func (r *LockRunReport) add(o LockRunReport) {
	r.Runs += o.Runs
	r.Failed += o.Failed
	r.Holdings += o.Holdings
	mergeStalls(&r.Stall, o.Stall)
}

// StoreURL is the etcd:// URL of the cluster's proxied client endpoints
// under prefix.
func (c *Cluster) StoreURL(prefix string) string {
	var hosts []string
	for _, ep := range c.ClientEndpoints() {
		hosts = append(hosts, strings.TrimPrefix(ep, "http://"))
	}
	return "etcd://" + strings.Join(hosts, ",") + "/" + strings.TrimSuffix(prefix, "/")
}

// lockRunLogPath is the CMDs' log of one run, in dir.
func lockRunLogPath(dir string, seed uint64, start time.Time) string {
	return filepath.Join(dir, fmt.Sprintf("lockrun-%d-%d.log", seed, start.UnixNano()))
}
