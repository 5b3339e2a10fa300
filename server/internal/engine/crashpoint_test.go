package engine

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment of the writer and open children for the log's crash points.
const (
	crashAtEnv   = "LATCHKEY_ENGINE_TEST_CRASH_AT"   // "POINT:N": SIGKILL itself at the Nth time at POINT
	ckptEveryEnv = "LATCHKEY_ENGINE_TEST_CKPT_EVERY" // Options.CheckpointInterval
)

// childOptions are the options of a child: fsync on, the log on, and the
// crash point and checkpoint interval its environment asks for.
func childOptions() *Options {
	o := &Options{}
	if d, err := time.ParseDuration(os.Getenv(ckptEveryEnv)); err == nil {
		o.CheckpointInterval = d
	}
	if at := os.Getenv(crashAtEnv); at != "" {
		point, count, _ := strings.Cut(at, ":")
		n, _ := strconv.Atoi(count)
		hits := 0
		o.crashHook = func(p string) {
			if p == point {
				if hits++; hits == n {
					if p, err := os.FindProcess(os.Getpid()); err == nil {
						p.Signal(os.Kill) // SIGKILL on Unix
					}
					select {} // the signal is on its way
				}
			}
		}
	}
	return o
}

// childOpen opens dir (replaying its log) and closes it.
func childOpen(dir string) {
	e, err := Open(dir, childOptions())
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	e.Close()
	fmt.Println("opened")
	os.Exit(0)
}

// runUntilCrash runs a writer child that kills itself at a crash point and
// returns the outcomes it printed before.
func runUntilCrash(t *testing.T, cmd *exec.Cmd) []ack {
	t.Helper()
	acks, err := runChild(t, cmd, nil)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die at its crash point: %v", err)
	}
	return acks
}

// checkPairs: the two keys of one Update are both present or both absent,
// whatever the crash interrupted.
func checkPairs(t *testing.T, e *Engine) int {
	t.Helper()
	n := 0
	e.View(func(tx *Tx) error {
		for _, kv := range listRecs(tx, "p/", "", 0) {
			base, half, _ := strings.Cut(kv.Key[strings.LastIndex(kv.Key, "/"):], "")
			_ = base
			other := strings.TrimSuffix(kv.Key, half) + map[string]string{"/a": "/b", "/b": "/a"}[half]
			if _, ok := getRec(tx, other); !ok {
				t.Errorf("%s present without %s: half an Update survived", kv.Key, other)
			}
			n++
		}
		return nil
	})
	return n
}

// Kill the writer at each crash point of the log, on one directory in
// turn: between the append's write and its fdatasync, after the fdatasync
// before bbolt's unsynced commit, after that commit before the
// acknowledgement, in a checkpoint between bbolt's sync and the slot
// save, and after the slot save before the log file is reused; then during
// Open's replay before its checkpoint. After each: every acknowledged
// write is there with its value, every two-key Update is whole or absent,
// the counter never holds a refused value nor goes back, and the index
// never goes backwards.
func TestCrashPointsOfTheLog(t *testing.T) {
	dir := t.TempDir()
	var maxAcked uint64
	check := func(what string, acks []ack) {
		t.Helper()
		e, err := Open(dir, nil)
		if err != nil {
			t.Fatalf("%s: reopen: %v", what, err)
		}
		defer e.Close()
		checkAcks(t, e, acks)
		pairs := checkPairs(t, e)
		for _, a := range acks {
			maxAcked = max(maxAcked, a.version)
		}
		if e.Index() < maxAcked {
			t.Fatalf("%s: index %d after restart, below acknowledged %d", what, e.Index(), maxAcked)
		}
		t.Logf("%s: %d outcomes before the crash, %d pair keys, index %d after restart", what, len(acks), pairs, e.Index())
	}
	var all []ack
	for _, c := range []struct{ point, n string }{
		{crashApplied, "150"}, {crashAppendWrote, "150"}, {crashLogged, "150"},
		{crashCkptSynced, "3"}, {crashCkptSaved, "3"},
	} {
		cmd := child(t, "writer", dir)
		cmd.Env = append(cmd.Env, crashAtEnv+"="+c.point+":"+c.n, ckptEveryEnv+"=20ms")
		acks := runUntilCrash(t, cmd)
		if len(acks) == 0 {
			t.Fatalf("%s: nothing acknowledged before the crash", c.point)
		}
		all = append(all, acks...)
		check("crash at "+c.point, all)
	}

	// Replay: a writer killed with records in the log (no checkpoint since
	// Open), then an Open killed after replaying them, before its own
	// checkpoint; then the records are replayed again.
	cmd := child(t, "writer", dir)
	cmd.Env = append(cmd.Env, ckptEveryEnv+"=1h")
	all = append(all, runAndKillCmd(t, cmd, 300)...)
	cmd = child(t, "open", dir)
	cmd.Env = append(cmd.Env, crashAtEnv+"="+crashReplayed+":1")
	runUntilCrash(t, cmd)
	check("crash during replay", all)
}

// A power loss may drop any bbolt write after the last checkpoint, or land
// bbolt's newest meta page without the pages it names. Simulated after a
// SIGKILL: both meta pages and every page past the checkpoint's end are
// overwritten with garbage. Open must rebuild every acknowledged write from
// the checkpoint and the log.
func TestPowerLossAfterCheckpointLosesNothing(t *testing.T) {
	dir := t.TempDir()
	cmd := child(t, "writer", dir)
	cmd.Env = append(cmd.Env, ckptEveryEnv+"=20ms")
	acks := runAndKillCmd(t, cmd, 1500)
	ck, _, err := loadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "latchkey.db"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	ps := int64(len(ck.page))
	hwm := int64(le64(ck.page[56:])) // bbolt meta: the first page past the tree
	garbage := make([]byte, ps)
	scribbled := 0
	for off := int64(0); off < st.Size(); off += ps {
		if off/ps < 2 || off/ps >= hwm {
			rand.Read(garbage)
			if _, err := f.WriteAt(garbage, off); err != nil {
				t.Fatal(err)
			}
			scribbled++
		}
	}
	f.Close()
	e, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("reopen after the simulated power loss: %v", err)
	}
	defer e.Close()
	checkAcks(t, e, acks)
	checkPairs(t, e)
	t.Logf("%d outcomes; checkpoint at seq %d; %d of %d pages scribbled; index %d after reopen",
		len(acks), ck.seq, scribbled, st.Size()/ps, e.Index())
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// When bbolt's file nears its memory map, the engine leaves the log and
// commits with bbolt's own fsyncs (the checkpoint's read transaction would
// block the remap forever). Writes go on, nothing is lost across the
// switch, and the next Open uses the log again.
func TestLeavingTheLogNearTheMapLimit(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir)
	if e.log == nil {
		t.Fatal("the engine runs without its log")
	}
	put(t, e, "before", "v")
	e.log.leaveAt.Store(1) // the writer leaves the log after the next commit
	put(t, e, "switch", "v")
	for i := range 200 { // a remap with a reader open would hang here
		e.Update(t.Context(), func(tx *Tx) error {
			tx.PutRecord(Record{Key: fmt.Sprintf("big/%d", i), Data: make([]byte, 64<<10)})
			return nil
		})
	}
	if _, err := os.Stat(walDir(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("log directory after leaving the log: %v", err)
	}
	e.Close()
	if e.log != nil {
		t.Fatal("still on the log")
	}
	e = openT(t, dir)
	if e.log == nil {
		t.Fatal("reopened without the log")
	}
	e.View(func(tx *Tx) error {
		for _, k := range []string{"before", "switch", "big/199"} {
			if _, ok := getRec(tx, k); !ok {
				t.Errorf("%s lost across leaving the log", k)
			}
		}
		return nil
	})
}

// A directory whose log was not checkpointed (the writer was killed), then
// opened without the log (NoSync, as tests do), is replayed first; the log
// is then gone and bbolt's file holds everything.
func TestOpenWithoutTheLogReplaysItFirst(t *testing.T) {
	dir := t.TempDir()
	cmd := child(t, "writer", dir)
	cmd.Env = append(cmd.Env, ckptEveryEnv+"=1h")
	acks := runAndKillCmd(t, cmd, 300)
	e, err := Open(dir, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	checkAcks(t, e, acks)
	if _, err := os.Stat(walDir(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("log directory after a NoSync Open: %v", err)
	}
	e.Close()
	e = openT(t, dir)
	checkAcks(t, e, acks)
}
