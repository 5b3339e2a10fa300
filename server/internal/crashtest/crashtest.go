// Package crashtest is the harness of the server's crash rounds: it runs
// the real server as an OS process, kills it with SIGKILL at random
// moments, restarts it on the same data directory, and checks that the
// history every client observed across all restarts is linearizable.
//
// The pieces, each usable alone:
//
//   - Process starts a server process (any command that prints the
//     server's startup line, "… http://HOST:PORT …", on stdout) and kills
//     it with SIGKILL.
//   - History records client-observed operations on registers (one
//     register per key: a value, "" for absent) with their call and
//     return times and outcome: done, refused or unknown.
//   - Check decides whether a History is linearizable (porcupine), per
//     register.
//
// An operation of unknown outcome (its connection died with the server)
// "may have happened": the model lets it take effect or not, at any
// point between its call and the moment the server process was known
// dead (History.Crashed), because a dead process applies nothing more.
//
// Values written must be unique per register (the register model tells
// writes apart by value): then a compare-and-swap by version (Consul's
// ModifyIndex, an S3 ETag) is a compare-and-swap by the value read.
package crashtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Process is one running server process.
type Process struct {
	Cmd *exec.Cmd
	URL string // http://HOST:PORT from its startup line
}

// Start runs cmd (stdout must be unset) and waits for the startup line. The
// process is killed at t's cleanup if still running.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd}
	t.Cleanup(func() { p.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("server process: %v", err)
	}
	go io.Copy(io.Discard, out)
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("server process said %q", line)
	}
	p.URL = strings.Fields(line[i:])[0]
	return p
}

// Kill sends SIGKILL and waits for the process to be gone. Idempotent.
func (p *Process) Kill() {
	if p.Cmd.ProcessState != nil {
		return
	}
	p.Cmd.Process.Signal(syscall.SIGKILL)
	p.Cmd.Wait()
}

// Outcome of one client-observed operation.
type Outcome int

const (
	Done    Outcome = iota // the server answered that it happened (a read: what it returned)
	Refused                // the server answered that it did not happen (a failed condition)
	Unknown                // no answer: it may have happened
	// Aborted: the server answered that nothing happened without saying
	// whether the condition held (S3's 409 ConditionalRequestConflict
	// for a write that raced another).
	Aborted
)

func (o Outcome) String() string { return [...]string{"done", "refused", "unknown", "aborted"}[o] }

// Op is one operation on a register.
type Op struct {
	Key string // the register
	// Read: Value is what was read. Otherwise a write of New that
	// applies when the register holds Expect (or Or, when Or is not ""),
	// or always when Always.
	Read   bool
	Expect string
	Or     string
	Always bool
	New    string
	// Soft: the write is answered Done whether or not its condition held
	// (a session destroy releasing only its own lock).
	Soft  bool
	Value string

	Outcome      Outcome
	Call, Return time.Time
	Client       int
	What         string // what the client sent, for messages
}

func (o Op) applies(state string) bool {
	return o.Always || state == o.Expect || (o.Or != "" && state == o.Or)
}

// History is a concurrent-safe record of operations.
type History struct {
	mu  sync.Mutex
	ops []Op
	// open are the indexes of Unknown ops not yet bounded by a crash.
	open []int
}

// Add records op; Unknown ops get their Return from the next Crashed.
func (h *History) Add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if op.Outcome == Unknown {
		h.open = append(h.open, len(h.ops))
	}
	h.ops = append(h.ops, op)
}

// Crashed says the server process died at (it was killed and reaped at
// or before that time): no operation of unknown outcome recorded so far
// can take effect after it. Call it once the clients have stopped. An
// unknown operation called after at reached no server and is dropped.
func (h *History) Crashed(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	drop := map[int]bool{}
	for _, i := range h.open {
		if h.ops[i].Call.After(at) {
			drop[i] = true
		}
		h.ops[i].Return = at
	}
	h.open = nil
	if len(drop) > 0 {
		kept := h.ops[:0]
		for i, op := range h.ops {
			if !drop[i] {
				kept = append(kept, op)
			}
		}
		h.ops = kept
	}
}

// Ops returns a copy of the history.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// Counts are the history's figures.
type Counts struct{ Ops, Reads, Done, Refused, Unknown, Aborted int }

// Counts counts the history's operations; the outcomes count writes only.
func (h *History) Counts() Counts {
	var c Counts
	for _, op := range h.Ops() {
		c.Ops++
		switch {
		case op.Read:
			c.Reads++
		case op.Outcome == Done:
			c.Done++
		case op.Outcome == Refused:
			c.Refused++
		case op.Outcome == Aborted:
			c.Aborted++
		default:
			c.Unknown++
		}
	}
	return c
}

// model is a register with conditional writes; Unknown writes branch.
var model = porcupine.NondeterministicModel{
	Init: func() []any { return []any{""} },
	Step: func(st, in, _ any) []any {
		s, op := st.(string), in.(Op)
		switch {
		case op.Read:
			if op.Value == s {
				return []any{s}
			}
			return nil
		case op.Outcome == Unknown:
			if op.applies(s) {
				return []any{s, op.New}
			}
			return []any{s}
		case op.Outcome == Aborted:
			return []any{s}
		case op.Outcome == Refused:
			if op.applies(s) {
				return nil
			}
			return []any{s}
		default: // Done
			if op.applies(s) {
				return []any{op.New}
			}
			if op.Soft {
				return []any{s}
			}
			return nil
		}
	},
	DescribeOperation: func(in, _ any) string { return describe(in.(Op)) },
}

func describe(op Op) string {
	if op.Read {
		return fmt.Sprintf("client %d read %s = %q", op.Client, op.Key, op.Value)
	}
	cond := fmt.Sprintf("if %q", op.Expect)
	if op.Always {
		cond = "always"
	} else if op.Or != "" {
		cond += fmt.Sprintf(" or %q", op.Or)
	}
	return fmt.Sprintf("client %d %s: %s := %q %s → %s", op.Client, op.What, op.Key, op.New, cond, op.Outcome)
}

// Check reports whether ops form a linearizable history, register by
// register, within timeout per register (0: none). Every Unknown op must
// have been bounded by Crashed. The error names the first register whose
// history is not linearizable, with its operations.
func Check(ops []Op, timeout time.Duration) error {
	byKey := map[string][]porcupine.Operation{}
	var keys []string
	base := time.Time{}
	for _, op := range ops {
		if base.IsZero() || op.Call.Before(base) {
			base = op.Call
		}
	}
	for _, op := range ops {
		if op.Return.IsZero() {
			return fmt.Errorf("crashtest: %s has no return time (unknown and never bounded by Crashed)", describe(op))
		}
		if _, ok := byKey[op.Key]; !ok {
			keys = append(keys, op.Key)
		}
		byKey[op.Key] = append(byKey[op.Key], porcupine.Operation{ClientId: op.Client, Input: op,
			Call: int64(op.Call.Sub(base)), Return: int64(op.Return.Sub(base))})
	}
	sort.Strings(keys)
	m := model.ToModel()
	for _, k := range keys {
		switch porcupine.CheckOperationsTimeout(m, byKey[k], timeout) {
		case porcupine.Ok:
		case porcupine.Unknown:
			return fmt.Errorf("crashtest: linearizability of %s undecided within %v (%d operations)", k, timeout, len(byKey[k]))
		default:
			var b strings.Builder
			hist := byKey[k]
			sort.Slice(hist, func(i, j int) bool { return hist[i].Call < hist[j].Call })
			// Show the end of the shortest failing prefix (by call time).
			lo, hi := 1, len(hist)
			for lo < hi {
				mid := (lo + hi) / 2
				if porcupine.CheckOperationsTimeout(m, hist[:mid], timeout) == porcupine.Illegal {
					hi = mid
				} else {
					lo = mid + 1
				}
			}
			hist = hist[:hi]
			for _, o := range hist[max(0, len(hist)-40):] {
				fmt.Fprintf(&b, "\n  [%d, %d] %s", o.Call/1e3, o.Return/1e3, describe(o.Input.(Op)))
			}
			return fmt.Errorf("crashtest: the history of %s is not linearizable (%d operations; the last 40 by call time of the shortest failing prefix, µs):%s",
				k, len(byKey[k]), b.String())
		}
	}
	return nil
}
