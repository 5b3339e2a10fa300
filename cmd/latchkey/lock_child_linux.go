//go:build linux

package main

import "syscall"

// childAttr puts CMD in its own process group and kills it when the
// thread that started it (see startChild) dies with lock run.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
