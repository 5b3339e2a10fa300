//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package filestore

import "errors"

// supported reports whether this platform has flock(2). Without it the
// directory store cannot be made safe across processes, so Open refuses.
const supported = false

var errNoFlock = errors.New("flock(2) is not available on this platform")

func openLockFile(path string) (int, error)        { return -1, errNoFlock }
func flock(fd int, exclusive, nonblock bool) error { return errNoFlock }
func funlock(fd int) error                         { return errNoFlock }
func closeFD(fd int) error                         { return nil }
