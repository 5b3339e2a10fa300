//go:build unix

package main

import (
	"runtime"
	"syscall"
)

// lockThread pins the calling goroutine to its OS thread for good.
func lockThread() { runtime.LockOSThread() }

// signalGroup sends s to the process group led by pid (CMD and whatever
// it started), falling back to pid alone.
func signalGroup(pid int, s syscall.Signal) {
	if err := syscall.Kill(-pid, s); err != nil {
		syscall.Kill(pid, s)
	}
}
