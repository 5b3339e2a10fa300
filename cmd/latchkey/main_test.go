package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
)

// asMain makes the test binary act as the latchkey command when re-executed
// with this variable set, so tests can run real OS processes of it.
const asMain = "LATCHKEY_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	// lock run starts its supervisor as this binary, asMain or not.
	if os.Getenv(asMain) == "1" || len(os.Args) > 1 && os.Args[1] == supervisorArg {
		main()
	}
	os.Exit(m.Run())
}

// testBinary is the path of this test binary, which acts as latchkey when
// run with asMain=1.
func testBinary(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// binary returns a command that runs this test binary as latchkey.
func binary(t testing.TB, args ...string) *exec.Cmd {
	cmd := exec.Command(testBinary(t), args...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	return cmd
}

// latchkeyDir returns a new directory holding `latchkey`, a script that
// runs this test binary as latchkey: put it on PATH to run shell text
// written for the real command.
func latchkeyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\n" + asMain + "=1 exec '" + testBinary(t) + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "latchkey"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startProcess starts cmd and has it killed and reaped when the test
// ends, if it is still running then. Unless cmd sets its own WaitDelay,
// a Wait waits at most 5s past the process's exit for output that a
// surviving grandchild still holds open.
func startProcess(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// startCombined starts cmd as startProcess does, with its stdout and
// stderr both going to the buffer it returns, which the test may read
// while cmd runs.
func startCombined(t testing.TB, cmd *exec.Cmd) *testutil.LockedBuffer {
	t.Helper()
	out := &testutil.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	startProcess(t, cmd)
	return out
}

// eventually polls ok every 10ms until it holds, for at most limit, and
// reports whether it did.
func eventually(limit time.Duration, ok func() bool) bool {
	for deadline := time.Now().Add(limit); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
