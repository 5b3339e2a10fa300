package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// signalNames are the conventional names of the signals every platform
// Go supports defines.
var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGSEGV: "SIGSEGV", syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM",
	syscall.SIGTERM: "SIGTERM",
}

// signalName is a signal's conventional name ("SIGTERM"), not Go's
// description ("terminated").
func signalName(sig os.Signal) string {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return sig.String()
	}
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}

// describeExit says how a command that ran as name ended, in the words a
// shell user expects: "sh exited with status 3", "sh was killed by
// SIGTERM". It returns the code a shell would report too.
func describeExit(name string, xe *exec.ExitError) (int, string) {
	if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), fmt.Sprintf("%s was killed by %s", name, signalName(ws.Signal()))
	}
	return xe.ExitCode(), fmt.Sprintf("%s exited with status %d", name, xe.ExitCode())
}
