package s3store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
)

// An object holds the value exactly as given; the write's nonce travels
// as user metadata only. Objects written by s3store before that carry a
// 53-byte header line in front of the value,
//
//	latchkey-s3store-v1 <32 hex digits of nonce>\n<value bytes>
//
// with the same nonce in the metadata; reads detect and strip it.
const (
	legacyMagic     = "latchkey-s3store-v1 "
	nonceHex        = 32
	legacyHeaderLen = len(legacyMagic) + nonceHex + 1 // 53
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

// parseLegacyHeader reports the nonce of a stored object's first
// legacyHeaderLen bytes, and false when they are not a legacy header.
func parseLegacyHeader(b []byte) (string, bool) {
	if len(b) != legacyHeaderLen || !bytes.HasPrefix(b, []byte(legacyMagic)) || b[legacyHeaderLen-1] != '\n' {
		return "", false
	}
	n := b[len(legacyMagic) : legacyHeaderLen-1]
	if _, err := hex.DecodeString(string(n)); err != nil {
		return "", false
	}
	return string(n), true
}

// isLegacy reports whether head (an object's first legacyHeaderLen bytes)
// is the header of an object written in the old format: a legacy header
// whose nonce is the object's metadata nonce, or any legacy header when
// the server kept no metadata. A value of today's format that merely
// starts with such a line has another nonce in its metadata (each write's
// nonce is fresh), so it is left alone.
func isLegacy(head []byte, meta string) bool {
	n, ok := parseLegacyHeader(head)
	return ok && (meta == "" || meta == n)
}

// decodeValue returns the value of a whole stored object whose metadata
// nonce is meta.
func decodeValue(obj []byte, meta string) []byte {
	if len(obj) >= legacyHeaderLen && isLegacy(obj[:legacyHeaderLen], meta) {
		return obj[legacyHeaderLen:]
	}
	return obj
}

// stripLegacyHeader returns a reader of the value inside a stored
// object's stream: a legacy header is consumed; otherwise the bytes read
// are given back.
func stripLegacyHeader(r io.Reader, meta string) (io.Reader, error) {
	buf := make([]byte, legacyHeaderLen)
	n, err := io.ReadFull(r, buf)
	switch {
	case err == nil:
		if isLegacy(buf, meta) {
			return r, nil
		}
		return io.MultiReader(bytes.NewReader(buf), r), nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return bytes.NewReader(buf[:n]), nil
	default:
		return nil, err
	}
}

// offsetSeeker is body from the offset it had at creation, as a
// seekable reader of its own (offset 0 is body's offset then), so that
// a streamed value that does not start at 0 can be hashed and rewound.
type offsetSeeker struct {
	body io.ReadSeeker
	base int64
	size int64
}

func newOffsetSeeker(body io.ReadSeeker) (*offsetSeeker, error) {
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
		return 0, errors.New("s3store: bad whence")
	}
	if abs < 0 {
		return 0, errors.New("s3store: negative position")
	}
	if _, err := o.body.Seek(o.base+abs, io.SeekStart); err != nil {
		return 0, err
	}
	return abs, nil
}
