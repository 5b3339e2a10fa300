//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// dieWithTest makes cmd, a process a test starts, get SIGKILL when the test
// binary dies, however it dies (a timeout's panic, kill -9 of go test):
// the Cleanup that startProcess registers runs only when the test ends
// normally. A cmd whose test set SysProcAttr keeps it.
func dieWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
}

const startsSleeperEnv = "LATCHKEY_TEST_STARTS_SLEEPER"

// TestHelperStartsSleeper is the child of TestKilledTestLeavesNoProcess:
// it starts a sleep with startProcess, prints its pid and waits.
func TestHelperStartsSleeper(t *testing.T) {
	if os.Getenv(startsSleeperEnv) != "1" {
		return // only as the child of TestKilledTestLeavesNoProcess
	}
	cmd := exec.Command("sleep", "60")
	startProcess(t, cmd)
	os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
	time.Sleep(time.Minute)
}

// kill -9 of a test binary: the processes its tests started with
// startProcess die with it instead of running on.
func TestKilledTestLeavesNoProcess(t *testing.T) {
	t.Parallel()
	child := exec.Command(testBinary(t), "-test.run=^TestHelperStartsSleeper$")
	child.Env = append(os.Environ(), startsSleeperEnv+"=1")
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startProcess(t, child)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the child test printed no pid: %v", err)
	}
	pid, err := strconv.Atoi(line[:len(line)-1])
	if err != nil {
		t.Fatalf("the child test printed %q", line)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	if !eventually(10*time.Second, func() bool { return !alive(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("sleep %d still runs 10s after its test binary was killed", pid)
	}
}
