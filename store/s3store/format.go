package s3store

import (
	"bytes"
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
