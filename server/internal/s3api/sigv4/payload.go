package sigv4

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"net/http"
)

// Body is what Verify returns: the request body, verified as it is read.
// Checksums returns the x-amz-checksum-* values that were verified, once
// Read has returned io.EOF (empty before, or when none were sent).
type Body interface {
	io.ReadCloser
	Checksums() http.Header
}

// hashReader passes a body through, hashing it with SHA-256 when want is
// set and with the checksum algorithms in sums, and turns the final io.EOF
// into an *Error when a digest differs.
type hashReader struct {
	src  io.ReadCloser
	sha  hash.Hash
	want []byte
	sums *checksums
	err  error
	ok   bool
}

func newHashReader(src io.ReadCloser, want []byte, sums *checksums) *hashReader {
	h := &hashReader{src: src, want: want, sums: sums}
	if want != nil {
		h.sha = sha256.New()
	}
	return h
}

func (h *hashReader) Read(p []byte) (int, error) {
	if h.err != nil {
		return 0, h.err
	}
	n, err := h.src.Read(p)
	if n > 0 {
		if h.sha != nil {
			h.sha.Write(p[:n])
		}
		if h.sums != nil {
			h.sums.Write(p[:n])
		}
	}
	if errors.Is(err, io.EOF) {
		err = h.finish()
	}
	if err != nil {
		h.err = err
	}
	return n, err
}

func (h *hashReader) finish() error {
	if h.sha != nil && !bytes.Equal(h.sha.Sum(nil), h.want) {
		return ErrContentSHA256Mismatch
	}
	if err := h.sums.verify(); err != nil {
		return err
	}
	h.ok = true
	return io.EOF
}

func (h *hashReader) Close() error { return h.src.Close() }

func (h *hashReader) Checksums() http.Header {
	if !h.ok {
		return http.Header{}
	}
	return h.sums.values()
}
