package s3store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
)

const (
	magic     = "latchkey-s3store-v1 "
	nonceHex  = 32
	headerLen = len(magic) + nonceHex + 1 // 53
	// metaNonce is the user-metadata key carrying the nonce
	// (x-amz-meta-latchkey-nonce on the wire).
	metaNonce = "latchkey-nonce"
)

// newNonce returns a fresh random nonce as 32 hex digits.
func newNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("s3store: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// header is the line stored in front of every value.
func header(nonce string) []byte {
	return []byte(magic + nonce + "\n")
}

// parseHeader reports the nonce of a stored object's first headerLen bytes,
// and false when they are not a latchkey header.
func parseHeader(b []byte) (string, bool) {
	if len(b) != headerLen || !bytes.HasPrefix(b, []byte(magic)) || b[headerLen-1] != '\n' {
		return "", false
	}
	n := b[len(magic) : headerLen-1]
	if _, err := hex.DecodeString(string(n)); err != nil {
		return "", false
	}
	return string(n), true
}

// decodeValue strips the header from a whole stored object.
func decodeValue(obj []byte) []byte {
	if len(obj) >= headerLen {
		if _, ok := parseHeader(obj[:headerLen]); ok {
			return obj[headerLen:]
		}
	}
	return obj
}

// stripHeader returns a reader of the value inside a stored object's
// stream: the header is consumed when present; otherwise the bytes read
// are given back.
func stripHeader(r io.Reader) (io.Reader, error) {
	buf := make([]byte, headerLen)
	n, err := io.ReadFull(r, buf)
	switch {
	case err == nil:
		if _, ok := parseHeader(buf); ok {
			return r, nil
		}
		return io.MultiReader(bytes.NewReader(buf), r), nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return bytes.NewReader(buf[:n]), nil
	default:
		return nil, err
	}
}

// prefixedSeeker is a seekable reader of head followed by the rest of
// body (from body's offset at creation), so that the SDK can hash and
// rewind a streamed value.
type prefixedSeeker struct {
	head  []byte
	body  io.ReadSeeker
	base  int64 // body's offset where the value starts
	size  int64 // len(head) + value length
	pos   int64
	dirty bool // body's position is not base+pos-len(head)
}

func newPrefixedSeeker(head []byte, body io.ReadSeeker) (*prefixedSeeker, error) {
	base, err := body.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	end, err := body.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if _, err := body.Seek(base, io.SeekStart); err != nil {
		return nil, err
	}
	return &prefixedSeeker{head: head, body: body, base: base, size: int64(len(head)) + end - base}, nil
}

func (p *prefixedSeeker) Read(b []byte) (int, error) {
	if p.pos >= p.size {
		return 0, io.EOF
	}
	hl := int64(len(p.head))
	if p.pos < hl {
		n := copy(b, p.head[p.pos:])
		p.pos += int64(n)
		return n, nil
	}
	if p.dirty {
		if _, err := p.body.Seek(p.base+p.pos-hl, io.SeekStart); err != nil {
			return 0, err
		}
		p.dirty = false
	}
	n, err := p.body.Read(b)
	p.pos += int64(n)
	return n, err
}

func (p *prefixedSeeker) Seek(off int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = off
	case io.SeekCurrent:
		abs = p.pos + off
	case io.SeekEnd:
		abs = p.size + off
	default:
		return 0, errors.New("s3store: bad whence")
	}
	if abs < 0 {
		return 0, errors.New("s3store: negative position")
	}
	p.pos = abs
	p.dirty = true
	return abs, nil
}
