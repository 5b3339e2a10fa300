package filestore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
)

// The cross-process tests re-execute this test binary: with
// LATCHKEY_FILESTORE_CHILD set, TestMain runs one child role and exits
// instead of running tests.
const childEnv = "LATCHKEY_FILESTORE_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		if err := runChild(role, os.Getenv("CHILD_DIR"), os.Getenv("CHILD_ARG")); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childRoles are what a child process of these tests can do with the
// store in its directory; arg is the role's parameter.
var childRoles = map[string]func(ctx context.Context, s *Store, dir, arg string) error{
	"create":    childCreate,
	"incr":      childIncr,
	"txn-stop":  childTxnStop,
	"overwrite": childOverwrite,
	"transfer":  childTransfer,
}

func runChild(role, dir, arg string) error {
	run, ok := childRoles[role]
	if !ok {
		return fmt.Errorf("unknown role %q", role)
	}
	s, err := Open(dir, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	return run(context.Background(), s, dir, arg)
}

// childCreate waits for the start file, then races one create of "race"
// and prints whether it won.
func childCreate(ctx context.Context, s *Store, dir, arg string) error {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "..", "go")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("no start signal")
		}
	}
	_, err := s.Put(ctx, "race", []byte(arg), store.IfAbsent)
	switch {
	case err == nil:
		fmt.Println("won")
	case errors.Is(err, store.ErrConflict):
		fmt.Println("lost")
	default:
		return err
	}
	return nil
}

// childIncr increments "counter" arg times.
func childIncr(ctx context.Context, s *Store, _, arg string) error {
	n, _ := strconv.Atoi(arg)
	for range n {
		if err := increment(ctx, s, "counter"); err != nil {
			return err
		}
	}
	return nil
}

// childTxnStop stops forever at point arg of a transaction writing a and
// x/b and deleting c.
func childTxnStop(ctx context.Context, s *Store, _, arg string) error {
	testHook = func(point string) error {
		if point == arg {
			fmt.Println("stopped")
			select {}
		}
		return nil
	}
	_, err := s.Txn(ctx, []store.TxnOp{
		store.PutOp("a", []byte("new"), store.Unconditional),
		store.PutOp("x/b", []byte("new"), store.Unconditional),
		store.DeleteOp("c", store.Unconditional),
	})
	return err
}

// childOverwrite rewrites k with uniform 64 KiB values until killed.
func childOverwrite(ctx context.Context, s *Store, _, _ string) error {
	fmt.Println("started")
	for i := 0; ; i++ {
		if _, err := s.Put(ctx, "k", uniform(byte(i)), store.Unconditional); err != nil {
			return err
		}
	}
}

// childTransfer moves units between a and b until killed.
func childTransfer(ctx context.Context, s *Store, _, _ string) error {
	fmt.Println("started")
	for {
		if err := transfer(ctx, s); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
}

// transfer moves one unit from a to x/b or back in one transaction.
func transfer(ctx context.Context, s *Store) error {
	a, err := s.Get(ctx, "a")
	if err != nil {
		return err
	}
	b, err := s.Get(ctx, "x/b")
	if err != nil {
		return err
	}
	na, _ := strconv.Atoi(string(a.Value))
	nb, _ := strconv.Atoi(string(b.Value))
	d := 1 - 2*rand.IntN(2)
	_, err = s.Txn(ctx, []store.TxnOp{
		store.PutOp("a", []byte(strconv.Itoa(na-d)), store.IfMatch(a.Version)),
		store.PutOp("x/b", []byte(strconv.Itoa(nb+d)), store.IfMatch(b.Version)),
	})
	return err
}

func child(t *testing.T, dir, role, arg string) *exec.Cmd {
	t.Helper()
	cmd := testutil.Child(childEnv+"="+role, "CHILD_DIR="+dir, "CHILD_ARG="+arg)
	cmd.Stderr = os.Stderr
	return cmd
}

// startChild starts a child and waits for its first line of output.
func startChild(t *testing.T, dir, role, arg, want string) *exec.Cmd {
	t.Helper()
	cmd := child(t, dir, role, arg)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != want {
		t.Fatalf("child %s said %q (%v), want %q", role, line, err, want)
	}
	return cmd
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

func TestProcessesRaceCreateExactlyOneWins(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "store")
	open(t, dir, nil) // create the layout once, so children race the Put, not Open
	const n = 8
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for i := range n {
		cmd := child(t, dir, "create", strconv.Itoa(i))
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	os.WriteFile(filepath.Join(base, "go"), nil, 0o644)
	winner := -1
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
		if strings.TrimSpace(outs[i].String()) == "won" {
			if winner >= 0 {
				t.Errorf("children %d and %d both created the key", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no child created the key")
	}
	wantValue(t, open(t, dir, nil), "race", strconv.Itoa(winner))
}

func TestProcessesCASIncrementsSumExactly(t *testing.T) {
	dir := t.TempDir()
	const procs, incs = 4, 25
	var cmds []*exec.Cmd
	for range procs {
		cmd := child(t, dir, "incr", strconv.Itoa(incs))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	s := open(t, dir, nil)
	for range incs { // this process takes part too
		if err := increment(context.Background(), s, "counter"); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	wantValue(t, s, "counter", strconv.Itoa((procs+1)*incs))
}

// A process killed inside a transaction leaves all of it or none of it,
// and the next locker (a store opened before the crash) or the next Open
// finishes a committed one.
func TestKilledTransactionIsAllOrNothing(t *testing.T) {
	for _, tc := range []struct {
		point string
		want  string // value of a and x/b afterwards
	}{
		{"checked", "old"},   // locked, conditions checked, no journal yet
		{"committed", "new"}, // journal durable, nothing applied
		{"applied 0", "new"}, // a renamed, x/b not
		{"applied 2", "new"}, // all applied, journal still there
	} {
		t.Run(tc.point, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, nil)
			for _, k := range []string{"a", "x/b", "c"} {
				mustPut(t, s, k, "old", store.IfAbsent)
			}
			kill(t, startChild(t, dir, "txn-stop", tc.point, "stopped"))
			// The first lock of x/b's stripe finishes (or ignores) the dead
			// transaction before reading.
			wantValue(t, s, "x/b", tc.want)
			wantValue(t, s, "a", tc.want)
			_, err := s.Get(context.Background(), "c")
			if gone := errors.Is(err, store.ErrNotFound); gone != (tc.want == "new") {
				t.Errorf("after the crash, Get(c) = %v", err)
			}
			s2 := open(t, dir, nil)
			wantValue(t, s2, "a", tc.want)
			if names, _ := readDirNames(filepath.Join(dir, txnDir)); len(names) != 0 {
				t.Errorf("journals left behind: %q", names)
			}
		})
	}
}

// Committed-but-unapplied journals are finished by Open too.
func TestOpenFinishesDeadTransaction(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, nil)
	mustPut(t, s, "a", "old", store.IfAbsent)
	mustPut(t, s, "x/b", "old", store.IfAbsent)
	s.Close()
	kill(t, startChild(t, dir, "txn-stop", "applied 0", "stopped"))
	s2 := open(t, dir, nil)
	if names, _ := readDirNames(filepath.Join(dir, txnDir)); len(names) != 0 {
		t.Errorf("Open left journals %q", names)
	}
	wantValue(t, s2, "x/b", "new")
}

// Transactions moving units between two keys, killed at random moments,
// never lose or make a unit.
func TestRandomlyKilledTransfersKeepTheSum(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, nil)
	mustPut(t, s, "a", "100", store.IfAbsent)
	mustPut(t, s, "x/b", "100", store.IfAbsent)
	for round := range 4 {
		cmds := []*exec.Cmd{startChild(t, dir, "transfer", "", "started"), startChild(t, dir, "transfer", "", "started")}
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
		for _, c := range cmds {
			kill(t, c)
		}
		a, b := wantInt(t, s, "a"), wantInt(t, s, "x/b")
		if a+b != 200 {
			t.Fatalf("round %d: a=%d b=%d, sum %d, want 200", round, a, b, a+b)
		}
		t.Logf("round %d: a=%d b=%d", round, a, b)
	}
}

func wantInt(t *testing.T, s *Store, key string) int {
	t.Helper()
	e, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(string(e.Value))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// uniform is a 64 KiB value of one repeated byte: a torn or mixed value
// shows as more than one byte value.
func uniform(b byte) []byte { return bytes.Repeat([]byte{b}, 64<<10) }

func wantUniform(t *testing.T, what string, v []byte) {
	t.Helper()
	if len(v) != 64<<10 || len(bytes.Trim(v, string(v[:1]))) != 0 {
		t.Fatalf("%s: a torn value of %d bytes", what, len(v))
	}
}

// Readers in this and other processes never see a torn value, and a
// writer killed mid-write leaves a whole value behind.
func TestKilledWriterLeavesWholeValues(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, nil)
	mustPut(t, s, "k", string(uniform('x')), store.IfAbsent)
	cmd := startChild(t, dir, "overwrite", "", "started")
	ctx := context.Background()
	seen := map[store.Version]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; len(seen) < 10; i++ { // read while at least 10 versions go by
		if time.Now().After(deadline) {
			t.Fatalf("saw only %d versions in 10s", len(seen))
		}
		if i%2 == 0 {
			e, err := s.Get(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			wantUniform(t, "Get", e.Value)
			seen[e.Version] = true
			continue
		}
		r, v, err := s.GetStream(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		wantUniform(t, "GetStream", b)
		seen[v] = true
	}
	kill(t, cmd)
	e, err := open(t, dir, nil).Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	wantUniform(t, "Get after the kill", e.Value)
}

// List finishes a dead transaction before it lists, so it never shows
// half of one.
func TestListFinishesDeadTransaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir, nil)
	for _, k := range []string{"a", "x/b", "c"} {
		mustPut(t, s, k, "old", store.IfAbsent)
	}
	kill(t, startChild(t, dir, "txn-stop", "applied 0", "stopped"))
	page, err := s.List(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range page.Items {
		keys = append(keys, it.Key)
		if v := wantValue(t, s, it.Key, "new"); v != it.Version {
			t.Errorf("List says %q is at %q, Get says %q", it.Key, it.Version, v)
		}
	}
	if strings.Join(keys, ",") != "a,x/b" {
		t.Errorf("List = %q, want a and x/b (c deleted by the transaction)", keys)
	}
}
