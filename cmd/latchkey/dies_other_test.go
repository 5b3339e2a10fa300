//go:build !linux

package main

import "os/exec"

// dieWithTest does nothing here: without Pdeathsig, a process a test
// starts ends at the test's Cleanup only.
func dieWithTest(*exec.Cmd) {}
