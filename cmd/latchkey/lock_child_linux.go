//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// child is a running CMD under its supervisor (see runSupervisor): lock
// run's child is the supervisor, CMD is the supervisor's, and lock run
// gives its orders through the control pipe.
type child struct {
	sup    *exec.Cmd
	ctl    *os.File      // the write end of the control pipe
	exited chan struct{} // closed when CMD and all it started are dead (or the supervisor is)
	status syscall.WaitStatus
	err    error // the supervisor ended without reporting CMD's exit
}

// signal sends s to CMD's process group; SIGKILL kills CMD's whole tree.
// Errors are ignored: a supervisor that is gone cannot be told anything.
func (ch *child) signal(s syscall.Signal) {
	if s == syscall.SIGKILL {
		io.WriteString(ch.ctl, "kill\n")
		return
	}
	fmt.Fprintf(ch.ctl, "signal %d\n", int(s))
}

// finish waits until CMD and every process it started are dead (the
// supervisor reports CMD's exit only then) and the supervisor has exited.
func (ch *child) finish() {
	<-ch.exited
	ch.ctl.Close()
	if ch.err == nil { // else supervisorEnd waited
		ch.sup.Wait()
	}
}

// result is CMD's exit: the code a shell would report, and a description.
func (ch *child) result() (int, string) {
	switch {
	case ch.err != nil:
		return exitFail, fmt.Sprintf("ended: its supervisor %v, so processes it started may still run", ch.err)
	case ch.status.Signaled():
		return 128 + int(ch.status.Signal()), "was killed by " + signalName(ch.status.Signal())
	}
	return ch.status.ExitStatus(), "exited with status " + strconv.Itoa(ch.status.ExitStatus())
}

// startChild starts CMD under a supervisor, the running binary started
// again (/proc/self/exe, which is this binary even if it was replaced on
// disk since). The supervisor and CMD get e's stdin, stdout and stderr.
func startChild(e *env, argv []string, token uint64) (*child, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stR, stW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	sup := exec.Command(exe, append([]string{supervisorArg, "--"}, argv...)...)
	sup.Args[0] = "latchkey"
	sup.Env = childEnv(e, token)
	sup.Stdin, sup.Stdout, sup.Stderr = e.stdin, e.stdout, e.stderr
	sup.ExtraFiles = []*os.File{ctlR, stW}
	// A group of its own: a signal to lock run's group (Ctrl-C, kill
	// -- -PGID) reaches CMD only as lock run forwards it.
	sup.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = sup.Start()
	ctlR.Close()
	stW.Close()
	if err != nil {
		ctlW.Close()
		stR.Close()
		return nil, fmt.Errorf("starting its supervisor: %w", err)
	}
	ch := &child{sup: sup, ctl: ctlW, exited: make(chan struct{})}
	st := bufio.NewReader(stR)
	line, err := st.ReadString('\n')
	if msg, ok := strings.CutPrefix(line, "error "); ok || line != "started\n" {
		ctlW.Close()
		stR.Close()
		sup.Wait()
		if ok {
			return nil, errors.New(strings.TrimSpace(msg))
		}
		return nil, fmt.Errorf("its supervisor failed: %v", supervisorEnd(sup, err))
	}
	go func() {
		defer stR.Close()
		line, err := st.ReadString('\n')
		n, ok := strings.CutPrefix(strings.TrimSpace(line), "exit ")
		ws, perr := strconv.Atoi(n)
		if err != nil || !ok || perr != nil {
			ch.err = supervisorEnd(sup, err)
		}
		ch.status = syscall.WaitStatus(ws)
		close(ch.exited)
	}()
	return ch, nil
}

// supervisorEnd describes a supervisor that stopped talking: it waits for
// it, and says how it ended.
func supervisorEnd(sup *exec.Cmd, readErr error) error {
	err := sup.Wait()
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		_, desc := describeExit("", xe)
		return errors.New(strings.TrimSpace(desc))
	}
	if readErr != nil {
		return fmt.Errorf("stopped reporting (%v)", readErr)
	}
	return errors.New("stopped reporting")
}
