// Package spool makes a value re-readable for a backend whose upload needs
// a known length and a body it can send again (to settle an unknown
// outcome): an io.ReadSeeker is used from its current offset, any other
// reader is copied to a temporary file first, so that nothing is held
// whole in memory and a reader that fails part-way fails the Put before
// anything is sent.
package spool

import (
	"errors"
	"io"
	"os"
)

// Seeker returns the value r holds as a reader that can be sent again:
// position 0 of rs is r's current offset when r is an io.ReadSeeker, so
// Seek(0, io.SeekStart) rewinds to where the value starts and
// Seek(0, io.SeekEnd) is its length; any other reader is copied to a new
// temporary file named after pattern (as os.CreateTemp), returned at its
// start. done releases what Seeker made (it closes and removes the file);
// call it once the upload is over, whatever its outcome. On error nothing
// is left behind.
func Seeker(r io.Reader, pattern string) (rs io.ReadSeeker, done func(), err error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		o, err := fromOffset(rs)
		return o, func() {}, err
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

// offsetSeeker is body from the offset it had at creation, as a seekable
// reader of its own (its position 0 is body's offset then).
type offsetSeeker struct {
	body io.ReadSeeker
	base int64
	size int64
}

// fromOffset measures body from its current offset to its end and leaves
// it at that offset.
func fromOffset(body io.ReadSeeker) (*offsetSeeker, error) {
	base, err := body.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	end, err := body.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if end < base {
		return nil, errors.New("spool: reader ends before its offset")
	}
	if _, err := body.Seek(base, io.SeekStart); err != nil {
		return nil, err
	}
	return &offsetSeeker{body: body, base: base, size: end - base}, nil
}

func (o *offsetSeeker) Read(b []byte) (int, error) { return o.body.Read(b) }

func (o *offsetSeeker) Seek(off int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = off
	case io.SeekCurrent:
		cur, err := o.body.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, err
		}
		abs = cur - o.base + off
	case io.SeekEnd:
		abs = o.size + off
	default:
		return 0, errors.New("spool: bad whence")
	}
	if abs < 0 {
		return 0, errors.New("spool: negative position")
	}
	if _, err := o.body.Seek(o.base+abs, io.SeekStart); err != nil {
		return 0, err
	}
	return abs, nil
}
