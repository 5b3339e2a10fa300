package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
)

// The tests below re-execute the test binary as a child process (the
// standard helper-process pattern): TestMain dispatches on childEnv.
const (
	childEnv    = "LATCHKEY_ENGINE_TEST_CHILD"
	childDirEnv = "LATCHKEY_ENGINE_TEST_DIR"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "lock":
		childLock(os.Getenv(childDirEnv))
	case "writer":
		childWriter(os.Getenv(childDirEnv))
	case "open":
		childOpen(os.Getenv(childDirEnv))
	case "powerwriter":
		childPowerWriter(os.Getenv(childDirEnv))
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode")
		os.Exit(3)
	}
}

func child(t *testing.T, mode, dir string) *exec.Cmd {
	cmd := testutil.Child(childEnv+"="+mode, childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	return cmd
}

// childLock tries to open dir and reports the outcome on stdout.
func childLock(dir string) {
	e, err := Open(dir, nil)
	switch {
	case errors.Is(err, ErrLocked):
		fmt.Println("locked")
	case err != nil:
		fmt.Println("error:", err)
	default:
		e.Close()
		fmt.Println("opened")
	}
	os.Exit(0)
}

func TestSecondOpenFromAnotherProcessIsRefused(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir)
	out, err := child(t, "lock", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "locked" {
		t.Fatalf("child Open while we hold the dir: %q, want locked", got)
	}
	e.Close()
	out, err = child(t, "lock", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "opened" {
		t.Fatalf("child Open after we closed: %q, want opened", got)
	}
}

// childWriter writes through the engine's store until killed, printing one
// line per outcome, only after the outcome is known (acks after fsync):
//
//	put KEY VALUE VERSION      an IfAbsent put of a distinct key succeeded
//	cas KEY VALUE VERSION      a CAS on the shared counter succeeded
//	refused KEY VALUE          a CAS on the shared counter was refused
func childWriter(dir string) {
	e, err := Open(dir, childOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	s := e.Store(rawCodec{})
	ctx := context.Background()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Printf(format+"\n", args...)
		mu.Unlock()
	}
	pid := os.Getpid()
	for w := range 8 {
		go func() {
			for n := 0; ; n++ {
				key := fmt.Sprintf("d/%d/%d/%d", pid, w, n)
				val := fmt.Sprintf("v%d-%d-%d", pid, w, n)
				v, err := s.Put(ctx, key, []byte(val), store.IfAbsent)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child put:", err)
					os.Exit(3)
				}
				say("put %s %s %s", key, val, v)
			}
		}()
	}
	for w := range 2 {
		go func() {
			for n := 0; ; n++ {
				// Two keys in one Update: after any crash, both or neither.
				a, b := fmt.Sprintf("p/%d/%d/%d/a", pid, w, n), fmt.Sprintf("p/%d/%d/%d/b", pid, w, n)
				vs, err := s.Txn(ctx, []store.TxnOp{{Kind: store.OpPut, Key: a, Value: []byte(a), Cond: store.IfAbsent},
					{Kind: store.OpPut, Key: b, Value: []byte(b), Cond: store.IfAbsent}})
				if err != nil {
					fmt.Fprintln(os.Stderr, "child txn:", err)
					os.Exit(3)
				}
				say("put %s %s %s", a, a, vs[0])
				say("put %s %s %s", b, b, vs[1])
			}
		}()
	}
	for w := range 8 {
		go func() {
			for n := 0; ; n++ {
				cur, err := s.Get(ctx, "c")
				cond := store.IfMatch(cur.Version)
				if errors.Is(err, store.ErrNotFound) {
					cond = store.IfAbsent
				} else if err != nil {
					os.Exit(3)
				}
				val := fmt.Sprintf("c%d-%d-%d", pid, w, n)
				v, err := s.Put(ctx, "c", []byte(val), cond)
				switch {
				case errors.Is(err, store.ErrConflict):
					say("refused c %s", val)
				case err != nil:
					os.Exit(3)
				default:
					say("cas c %s %s", val, v)
				}
			}
		}()
	}
	select {}
}

// Kill a writer process with SIGKILL mid-load, reopen the directory, and
// check: every acknowledged write is there with its value, no refused
// write is, and the index never goes backwards. Three rounds on one dir.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	dir := t.TempDir()
	var maxAcked uint64
	for round := range 3 {
		acks := runAndKill(t, dir, 400+round*200)
		e, err := Open(dir, nil)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		checkAcks(t, e, acks)
		for _, a := range acks {
			maxAcked = max(maxAcked, a.version)
		}
		if e.Index() < maxAcked {
			t.Fatalf("round %d: index %d after restart, below acknowledged %d", round, e.Index(), maxAcked)
		}
		t.Logf("round %d: %d outcomes before SIGKILL, index %d after restart", round, len(acks), e.Index())
		e.Close()
	}
}

type ack struct {
	kind, key, value string
	version          uint64
}

// runAndKill starts a writer child, SIGKILLs it after n outcomes, and
// returns every complete outcome line it printed.
func runAndKill(t *testing.T, dir string, n int) []ack {
	t.Helper()
	return runAndKillCmd(t, child(t, "writer", dir), n)
}

// runAndKillCmd is runAndKill of a prepared writer child.
func runAndKillCmd(t *testing.T, cmd *exec.Cmd, n int) []ack {
	t.Helper()
	killed := false
	acks, _ := runChild(t, cmd, func(got int) {
		if got == n && !killed {
			killed = true
			cmd.Process.Signal(syscall.SIGKILL)
		}
	})
	if !killed {
		t.Fatalf("writer child ended after %d outcomes without being killed", len(acks))
	}
	return acks
}

// runChild starts a writer child (killed after 60 s at the latest) and
// reads the outcome lines it prints until its output ends; after each,
// it calls each (nil allowed) with the number read so far. It returns the
// outcomes and the child's exit error.
func runChild(t *testing.T, cmd *exec.Cmd, each func(n int)) ([]ack, error) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	var acks []ack
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err != nil { // EOF once the child is dead; a partial last line is ignored
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		a := ack{kind: f[0], key: f[1], value: f[2]}
		if len(f) == 4 {
			a.version, _ = strconv.ParseUint(f[3], 10, 64)
		}
		acks = append(acks, a)
		if each != nil {
			each(len(acks))
		}
	}
	return acks, cmd.Wait()
}

func checkAcks(t *testing.T, e *Engine, acks []ack) {
	t.Helper()
	refused := map[string]bool{}
	var lastCAS ack
	e.View(func(tx *Tx) error {
		for _, a := range acks {
			switch a.kind {
			case "put":
				kv, ok := getRec(tx, a.key)
				if !ok || string(kv.Data) != a.value || kv.ModifyIndex != a.version {
					t.Errorf("acknowledged put %s=%s@%d lost: got %q@%d present=%v", a.key, a.value, a.version, kv.Data, kv.ModifyIndex, ok)
				}
			case "cas":
				if a.version > lastCAS.version {
					lastCAS = a
				}
			case "refused":
				refused[a.value] = true
			}
		}
		c, ok := getRec(tx, "c")
		if lastCAS.version > 0 && !ok {
			t.Fatalf("counter missing after acknowledged CAS %+v", lastCAS)
		}
		if refused[string(c.Data)] {
			t.Errorf("counter holds a refused value %q", c.Data)
		}
		if c.ModifyIndex < lastCAS.version || (c.ModifyIndex == lastCAS.version && string(c.Data) != lastCAS.value) {
			t.Errorf("counter %q@%d, but %q@%d was acknowledged", c.Data, c.ModifyIndex, lastCAS.value, lastCAS.version)
		}
		return nil
	})
}
