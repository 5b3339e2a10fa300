//go:build !unix

package engine

import (
	"errors"
	"os"
)

// lockDir: the engine relies on flock(2) to keep a second server off a data
// directory; without it, refuse rather than risk two writers.
func lockDir(dir string) (*os.File, error) {
	return nil, errors.New("engine: locking a data directory is supported on Unix systems only")
}
