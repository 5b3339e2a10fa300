package sigv4

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	maxChunkLine   = 4 << 10  // one chunk header or trailer line
	maxTrailerSize = 16 << 10 // the whole trailer section
)

// chunkedReader decodes an aws-chunked body:
//
//	<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n … 0[;chunk-signature=<sig>]\r\n
//	[<trailer>:<value>\r\n … [x-amz-trailer-signature:<sig>\r\n]]\r\n
//
// It streams chunk data to the caller as it arrives and checks each chunk's
// signature (chained from the seed signature) when the chunk ends, before
// the caller can see io.EOF.
type chunkedReader struct {
	src      io.ReadCloser
	br       *bufio.Reader
	decoded  int64 // x-amz-decoded-content-length
	maxChunk int64
	signed   bool // chunk signatures present
	trailer  bool // a trailer section follows the last chunk
	key      []byte
	time     time.Time
	scope    scope
	prevSig  string
	sums     *checksums // declared in x-amz-trailer
	hsums    *checksums // x-amz-checksum-* headers of the request

	remaining int64     // bytes of the current chunk still to read
	chunkSig  string    // signature of the current chunk
	chunkHash hash.Hash // sha256 of the current chunk (signed chunks only)
	total     int64
	inChunk   bool
	err       error
	ok        bool
}

func (c *chunkedReader) init() {
	c.br = bufio.NewReaderSize(c.src, maxChunkLine)
	c.chunkHash = sha256.New()
}

func (c *chunkedReader) Close() error { return c.src.Close() }

func (c *chunkedReader) Checksums() http.Header {
	if !c.ok {
		return http.Header{}
	}
	h := c.sums.values()
	for k, v := range c.hsums.values() {
		h[k] = v
	}
	return h
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if !c.inChunk {
		if err := c.nextChunk(); err != nil {
			c.err = err
			if err == io.EOF {
				c.ok = true
			}
			return 0, err
		}
	}
	if int64(len(p)) > c.remaining {
		p = p[:c.remaining]
	}
	n, err := c.br.Read(p)
	c.remaining -= int64(n)
	c.total += int64(n)
	if c.signed {
		c.chunkHash.Write(p[:n])
	}
	if c.sums != nil {
		c.sums.Write(p[:n])
	}
	if c.hsums != nil {
		c.hsums.Write(p[:n])
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = newErr(ErrIncompleteBody, "the aws-chunked body ended inside a chunk")
		}
		c.err = err
		return n, err
	}
	if c.remaining == 0 {
		if err := c.endChunk(); err != nil {
			c.err = err
			return n, err
		}
	}
	return n, nil
}

// readLine reads one line without its line ending, bounded in length.
func (c *chunkedReader) readLine() (string, error) {
	line, err := c.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return "", newErr(ErrMalformedChunk, "an aws-chunked header line is longer than %d bytes", maxChunkLine)
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return "", io.EOF
		}
		if !errors.Is(err, io.EOF) {
			return "", err
		}
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

// nextChunk reads a chunk header; at the final chunk it finishes the body
// and returns io.EOF or the verification error.
func (c *chunkedReader) nextChunk() error {
	line, err := c.readLine()
	if err == io.EOF {
		return newErr(ErrIncompleteBody, "the aws-chunked body ended before its final chunk")
	}
	if err != nil {
		return err
	}
	sizeHex, ext, _ := strings.Cut(line, ";")
	size, perr := strconv.ParseInt(strings.TrimSpace(sizeHex), 16, 64)
	if perr != nil || size < 0 {
		return newErr(ErrMalformedChunk, "bad aws-chunked chunk size %q", sizeHex)
	}
	if size > c.maxChunk {
		return newErr(ErrMalformedChunk, "aws-chunked chunk of %d bytes exceeds the limit of %d", size, c.maxChunk)
	}
	c.chunkSig = ""
	if c.signed {
		sig, ok := strings.CutPrefix(strings.TrimSpace(ext), "chunk-signature=")
		if !ok || len(sig) != 64 {
			return newErr(ErrMalformedChunk, "aws-chunked chunk without a chunk-signature")
		}
		c.chunkSig = sig
	}
	c.chunkHash.Reset()
	if size == 0 {
		return c.finish()
	}
	if c.total+size > c.decoded {
		return newErr(ErrIncompleteBody, "the aws-chunked body is longer than x-amz-decoded-content-length %d", c.decoded)
	}
	c.remaining = size
	c.inChunk = true
	return nil
}

// endChunk reads the CRLF after a chunk's data and checks its signature.
func (c *chunkedReader) endChunk() error {
	c.inChunk = false
	line, err := c.readLine()
	if err != nil || line != "" {
		return newErr(ErrMalformedChunk, "aws-chunked chunk data not followed by CRLF")
	}
	return c.checkChunkSig()
}

func (c *chunkedReader) checkChunkSig() error {
	if !c.signed {
		return nil
	}
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.time.UTC().Format(amzDateFormat) + "\n" + c.scope.String() + "\n" +
		c.prevSig + "\n" + emptySHA256 + "\n" + hex.EncodeToString(c.chunkHash.Sum(nil))
	want := signHex(c.key, sts)
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(c.chunkSig))) {
		return newErr(ErrSignatureDoesNotMatch, "the signature of aws-chunked chunk %d bytes into the body does not match", c.total)
	}
	c.prevSig = want
	return nil
}

// finish handles the final zero-length chunk and what follows it.
func (c *chunkedReader) finish() error {
	if err := c.checkChunkSig(); err != nil {
		return err
	}
	if c.total != c.decoded {
		return newErr(ErrIncompleteBody, "the aws-chunked body holds %d bytes; x-amz-decoded-content-length says %d", c.total, c.decoded)
	}
	if c.trailer {
		if err := c.readTrailers(); err != nil {
			return err
		}
	} else if line, err := c.readLine(); err != nil && err != io.EOF || line != "" {
		return newErr(ErrMalformedChunk, "the final aws-chunked chunk is not followed by CRLF")
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	if err := c.sums.verify(); err != nil {
		return err
	}
	if err := c.hsums.verify(); err != nil {
		return err
	}
	return io.EOF
}

// readTrailers reads trailer lines up to the end of the body. Blank lines
// are tolerated between trailers (clients differ in their line endings).
func (c *chunkedReader) readTrailers() error {
	var signedPart bytes.Buffer
	sig := ""
	size := 0
	for {
		line, err := c.readLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		size += len(line) + 2
		if size > maxTrailerSize {
			return newErr(ErrMalformedChunk, "the aws-chunked trailer is longer than %d bytes", maxTrailerSize)
		}
		if line == "" {
			if c.trailersComplete(sig) {
				break
			}
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return newErr(ErrMalformedChunk, "malformed aws-chunked trailer line")
		}
		name = strings.ToLower(strings.TrimSpace(name))
		value = strings.TrimSpace(value)
		if name == "x-amz-trailer-signature" {
			sig = value
			continue
		}
		signedPart.WriteString(name + ":" + value + "\n")
		if !c.sums.set(name, value) {
			return newErr(ErrMalformedChunk, "trailer %q was not declared in x-amz-trailer", name)
		}
	}
	if !c.signed {
		return nil
	}
	if sig == "" {
		return newErr(ErrSignatureDoesNotMatch, "the aws-chunked trailer has no x-amz-trailer-signature")
	}
	sum := sha256.Sum256(signedPart.Bytes())
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + c.time.UTC().Format(amzDateFormat) + "\n" + c.scope.String() + "\n" +
		c.prevSig + "\n" + hex.EncodeToString(sum[:])
	if want := signHex(c.key, sts); !hmac.Equal([]byte(want), []byte(strings.ToLower(sig))) {
		return newErr(ErrSignatureDoesNotMatch, "the aws-chunked trailer signature does not match")
	}
	return nil
}

// trailersComplete reports whether every declared trailer (and, when
// signed, the trailer signature) has been read.
func (c *chunkedReader) trailersComplete(sig string) bool {
	if c.signed && sig == "" {
		return false
	}
	for _, w := range c.sums.want {
		if w == "" {
			return false
		}
	}
	return true
}

// expectEnd checks that nothing but line endings follows the body (clients
// differ in how many CRLFs close the trailer section).
func (c *chunkedReader) expectEnd() error {
	buf := make([]byte, 64)
	for extra := 0; ; {
		n, err := c.br.Read(buf)
		for _, b := range buf[:n] {
			if b != '\r' && b != '\n' {
				return newErr(ErrMalformedChunk, "data after the end of the aws-chunked body")
			}
		}
		extra += n
		if extra > maxChunkLine {
			return newErr(ErrMalformedChunk, "data after the end of the aws-chunked body")
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
