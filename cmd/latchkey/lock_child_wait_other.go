//go:build !linux

package main

// waitExitedNoReap is Linux only; elsewhere lock run reaps CMD first and
// then signals its process group, which a new process could in principle
// have taken by then.
func waitExitedNoReap(pid int) bool { return false }
