//go:build linux

package main

import (
	"syscall"
	"unsafe"
)

// waitExitedNoReap blocks until the process pid has exited, and leaves it
// unreaped (waitid with WNOWAIT): while it is a zombie its pid, and so its
// process group id, cannot be reused, and the group can be killed safely.
// It reports false if the wait failed; the caller then reaps at once.
func waitExitedNoReap(pid int) bool {
	const pPID, wExited, wNoWait = 1, 4, 0x1000000
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		switch errno {
		case 0:
			return true
		case syscall.EINTR:
			continue
		}
		return false
	}
}
