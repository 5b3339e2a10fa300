package testutil

import (
	"bytes"
	"sync"
)

// LockedBuffer is a bytes.Buffer safe for concurrent writes and reads: a
// server's log, a child process's output copied by os/exec while the test
// reads it. It has no ReadFrom, so os/exec copies through Write.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what has been written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
