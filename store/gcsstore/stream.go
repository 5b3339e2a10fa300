package gcsstore

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
	"github.com/latchkey/latchkey/store/internal/spool"
)

// PutStream is Put with the value read from r, sent in one upload request
// with no buffer, so memory stays bounded whatever the size. The
// generation precondition is checked when the upload completes. An
// io.ReadSeeker is sent as is (from its current offset to its end, as
// measured before sending) and can be sent again to resolve an unknown
// outcome; any other reader is first spooled to a temporary file, so that
// a reader failing part-way fails the Put before anything is sent
// (ErrTransient, nothing stored).
func (s *Store) PutStream(ctx context.Context, key string, r io.Reader, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	rs, size, done, err := spool.Seeker(r, backend, key)
	if err != nil {
		return "", err
	}
	defer done()
	return s.put(ctx, key, func() (io.Reader, int64, bool) {
		if _, err := rs.Seek(0, io.SeekStart); err != nil {
			return nil, 0, false
		}
		return rs, size, true
	}, cond)
}

// GetStream returns a reader of the key's value and its generation. The
// reader is one download response, so it yields exactly that
// generation's bytes; it fails (it is not resumed) if the connection
// breaks mid-value, and at its end if the bytes do not match the CRC32C
// the server sent.
func (s *Store) GetStream(ctx context.Context, key string) (io.ReadCloser, store.Version, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return nil, "", err
	}
	var (
		r   io.ReadCloser
		gen int64
	)
	err := reads.Do(ctx, func() (err error) { r, gen, err = s.openObject(ctx, key); return err })
	if err != nil {
		return nil, "", opError("get", key, classify(resolve.OpRead, err), err)
	}
	return r, version(gen), nil
}

// openObject starts the download of key's bytes (alt=media) and returns
// them, checked against their CRC32C, with the generation the answer
// names (X-Goog-Generation).
func (s *Store) openObject(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	resp, err := s.send(ctx, http.MethodGet, s.objectURL(key, url.Values{"alt": {"media"}}), nil, 0, "")
	if err != nil {
		return nil, 0, err
	}
	gen, err := strconv.ParseInt(resp.Header.Get("X-Goog-Generation"), 10, 64)
	if err != nil || gen <= 0 {
		resp.Body.Close()
		return nil, 0, &badAnswer{fmt.Sprintf("download without a valid X-Goog-Generation (%q)", resp.Header.Get("X-Goog-Generation"))}
	}
	want, ok := storedCRC(resp)
	if !ok {
		return resp.Body, gen, nil
	}
	return &crcReader{rc: resp.Body, h: crc32.New(crc32.MakeTable(crc32.Castagnoli)), want: want}, gen, nil
}

// storedCRC is the CRC32C of the object's bytes from X-Goog-Hash, when the
// answer carries them as stored (not transcoded or decompressed).
func storedCRC(resp *http.Response) (uint32, bool) {
	if resp.Uncompressed || resp.Header.Get("Content-Encoding") != "" ||
		resp.Header.Get("X-Goog-Stored-Content-Encoding") == "gzip" {
		return 0, false
	}
	for _, h := range resp.Header.Values("X-Goog-Hash") {
		for _, part := range strings.Split(h, ",") {
			v, ok := strings.CutPrefix(strings.TrimSpace(part), "crc32c=")
			if !ok {
				continue
			}
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil || len(b) != 4 {
				return 0, false
			}
			return binary.BigEndian.Uint32(b), true
		}
	}
	return 0, false
}

// crcReader fails at the end of the body when its bytes do not match the
// CRC32C the server announced.
type crcReader struct {
	rc   io.ReadCloser
	h    hash.Hash32
	want uint32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.h.Write(p[:n])
	if err == io.EOF && c.h.Sum32() != c.want {
		return n, &badAnswer{fmt.Sprintf("value fails its CRC32C: got %08x, the server sent %08x", c.h.Sum32(), c.want)}
	}
	return n, err
}

func (c *crcReader) Close() error { return c.rc.Close() }
