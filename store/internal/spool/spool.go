// Package spool makes a value re-readable for a backend whose upload needs
// a known length and a body it can send again (to settle an unknown
// outcome): an io.ReadSeeker is used from its current offset, any other
// reader is copied to a temporary file first, so that nothing is held
// whole in memory and a reader that fails part-way fails the Put before
// anything is sent.
package spool

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/latchkey/latchkey/store"
)

// Seeker returns the value r holds for backend's Put of key as a reader
// that can be sent again, and its length: position 0 of rs is r's current
// offset when r is an io.ReadSeeker, so Seek(0, io.SeekStart) rewinds to
// where the value starts; any other reader is copied to a new temporary
// file (named "<backend>-spool-*"), returned at its start. done releases
// what Seeker made (it closes and removes the file); call it once the
// upload is over, whatever its outcome. A failure is the Put's
// store.ErrTransient (nothing was sent), and leaves nothing behind.
func Seeker(r io.Reader, backend, key string) (rs io.ReadSeeker, size int64, done func(), err error) {
	rs, size, done, err = spool(r, backend+"-spool-*")
	if err != nil {
		return nil, 0, nil, store.NewOpError(backend, "put", key, store.ErrTransient, fmt.Errorf("spool value: %w", err))
	}
	return rs, size, done, nil
}

func spool(r io.Reader, pattern string) (io.ReadSeeker, int64, func(), error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		o, err := fromOffset(rs)
		if err != nil {
			return nil, 0, nil, err
		}
		return o, o.size, func() {}, nil
	}
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, 0, nil, err
	}
	done := func() {
		f.Close()
		os.Remove(f.Name())
	}
	n, err := io.Copy(f, r)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		done()
		return nil, 0, nil, err
	}
	return f, n, done, nil
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
