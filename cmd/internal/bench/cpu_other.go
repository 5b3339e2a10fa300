//go:build !linux

package bench

import (
	"errors"
	"syscall"
	"time"
)

// clockTick is unused where /proc is missing.
const clockTick = 10 * time.Millisecond

var errNoProcCPU = errors.New("CPU accounting needs Linux's /proc")

func processCPU(int) (time.Duration, error) { return 0, errNoProcCPU }
func selfCPU() (time.Duration, error)       { return 0, errNoProcCPU }
func listenerPID(string) (int, bool)        { return 0, false }

func benchChildAttr() *syscall.SysProcAttr { return nil }
