//go:build !linux

package main

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// child is a running CMD, lock run's own child. Outside Linux there is no
// supervisor (see lock_supervisor_linux.go): CMD runs in its own process
// group where the platform has them, and what it leaves in that group is
// killed when it exits, but if lock run is killed, CMD and everything it
// started run on.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when CMD has exited and was reaped
	state  *os.ProcessState
}

func (ch *child) signal(s syscall.Signal) {
	signalGroup(ch.cmd.Process.Pid, s)
}

// finish kills whatever is left of CMD's process group (SIGKILL). CMD has
// exited; as it was reaped first, a new process could in principle have
// taken its process group id by then.
func (ch *child) finish() {
	<-ch.exited
	ch.signal(syscall.SIGKILL)
}

// result is CMD's exit: the code a shell would report, and a description.
func (ch *child) result() (int, string) {
	if ws, ok := ch.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), "was killed by " + signalName(ws.Signal())
	}
	return ch.state.ExitCode(), "exited with status " + strconv.Itoa(ch.state.ExitCode())
}

// startChild starts argv from a goroutine locked to its OS thread, which
// stays alive until the child exits (a parent-death signal, where there is
// one, fires when the thread that started the child exits). CMD gets e's
// stdin, stdout and stderr.
func startChild(e *env, argv []string, token uint64) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = childEnv(e, token)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	cmd.SysProcAttr = childAttr()
	ch := &child{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		lockThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		ch.state = cmd.ProcessState
		close(ch.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return ch, nil
}
