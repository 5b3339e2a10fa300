//go:build !linux

package main

import (
	"fmt"
	"os"
)

// runSupervisor: lock run has a supervisor on Linux only.
func runSupervisor(argv []string) int {
	fmt.Fprintln(os.Stderr, "latchkey: "+supervisorArg+" is lock run's own helper on Linux, not a command")
	return exitUsage
}
