//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filestore

import (
	"errors"
	"syscall"
)

// supported reports whether this platform has flock(2).
const supported = true

var errNoFlock error // unused here; see flock_other.go

// openLockFile opens (creating if needed) a lock file and returns its raw
// descriptor. Every call yields a new open file description, so two
// descriptors of one file exclude each other under flock even within one
// process.
func openLockFile(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return fd, err
	}
}

// flock takes a shared or exclusive lock on fd; with nonblock it fails
// with errWouldBlock instead of waiting.
func flock(fd int, exclusive, nonblock bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if nonblock {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(fd, how)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errWouldBlock
		}
		return err
	}
}

// funlock releases the lock held through fd.
func funlock(fd int) error {
	for {
		err := syscall.Flock(fd, syscall.LOCK_UN)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return err
	}
}

func closeFD(fd int) error { return syscall.Close(fd) }
