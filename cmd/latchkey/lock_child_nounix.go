//go:build !unix

package main

import (
	"os"
	"syscall"
)

func lockThread() {}

// childAttr: no process groups or parent-death signal here; CMD outlives
// a lock run that is killed.
func childAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills CMD (other signals cannot be sent on this platform).
func signalGroup(pid int, s syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
