// Package spool makes a value re-readable for a backend whose upload needs
// a known length and a body it can send again (to settle an unknown
// outcome): an io.ReadSeeker is used as is, any other reader is copied to
// a temporary file first, so that nothing is held whole in memory and a
// reader that fails part-way fails the Put before anything is sent.
package spool

import (
	"io"
	"os"
)

// Seeker returns r when it is an io.ReadSeeker (at its current offset);
// otherwise it copies r to a new temporary file named after pattern (as
// os.CreateTemp) and returns the file at its start. done releases what
// Seeker made (it closes and removes the file); call it once the upload is
// over, whatever its outcome. On error nothing is left behind.
func Seeker(r io.Reader, pattern string) (rs io.ReadSeeker, done func(), err error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		return rs, func() {}, nil
	}
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, nil, err
	}
	done = func() {
		f.Close()
		os.Remove(f.Name())
	}
	if _, err := io.Copy(f, r); err != nil {
		done()
		return nil, nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		done()
		return nil, nil, err
	}
	return f, done, nil
}
