package sigv4

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"net/http"
	"strings"

	"github.com/minio/crc64nvme"
)

// ChecksumAlgorithms are the x-amz-checksum-<name> algorithms verified.
var ChecksumAlgorithms = []string{"crc32", "crc32c", "crc64nvme", "sha1", "sha256"}

// NewChecksumHash returns a new hash for an x-amz-checksum algorithm name
// ("crc32", "crc32c", "crc64nvme", "sha1", "sha256"), or nil for any other.
func NewChecksumHash(name string) hash.Hash {
	switch name {
	case "crc32":
		return crc32.NewIEEE()
	case "crc32c":
		return crc32.New(crc32.MakeTable(crc32.Castagnoli))
	case "crc64nvme":
		return crc64nvme.New()
	case "sha1":
		return sha1.New()
	case "sha256":
		return sha256.New()
	}
	return nil
}

// checksums computes the x-amz-checksum-* digests of a body while it
// streams and checks them against the values the client sent.
type checksums struct {
	names  []string // header names, lower case: x-amz-checksum-crc32
	hashes []hash.Hash
	want   []string // base64 digests; "" until known (trailers)
}

func (c *checksums) add(name, want string) {
	c.names = append(c.names, name)
	c.hashes = append(c.hashes, NewChecksumHash(strings.TrimPrefix(name, "x-amz-checksum-")))
	c.want = append(c.want, want)
}

func (c *checksums) Write(p []byte) (int, error) {
	for _, h := range c.hashes {
		h.Write(p)
	}
	return len(p), nil
}

// set records a trailer value; it reports false for an undeclared name.
func (c *checksums) set(name, value string) bool {
	for i, n := range c.names {
		if n == name {
			c.want[i] = value
			return true
		}
	}
	return false
}

// verify compares every digest at the end of the body.
func (c *checksums) verify() error {
	if c == nil {
		return nil
	}
	for i, h := range c.hashes {
		if c.want[i] == "" {
			return newErr(ErrMalformedChunk, "the declared trailer %s was not sent", c.names[i])
		}
		want, err := base64.StdEncoding.DecodeString(c.want[i])
		if err != nil || len(want) != h.Size() {
			return newErr(ErrInvalidChecksum, "Value for %s header is invalid.", c.names[i])
		}
		if !bytes.Equal(want, h.Sum(nil)) {
			alg := strings.ToUpper(strings.TrimPrefix(c.names[i], "x-amz-checksum-"))
			return newErr(ErrBadDigest, "The %s you specified did not match the calculated checksum.", alg)
		}
	}
	return nil
}

// values returns the verified checksums as headers.
func (c *checksums) values() http.Header {
	h := http.Header{}
	if c == nil {
		return h
	}
	for i, n := range c.names {
		if c.want[i] != "" {
			h.Set(n, c.want[i])
		}
	}
	return h
}

// headerChecksums collects the x-amz-checksum-* headers that are checksums
// of this request's body: PUT requests (PutObject, UploadPart) that are not
// copies. CompleteMultipartUpload's checksum headers describe the whole
// object, not the request body, and are left to the handler.
func headerChecksums(r *http.Request) (*checksums, error) {
	if r.Method != http.MethodPut || r.Header.Get("X-Amz-Copy-Source") != "" {
		return nil, nil
	}
	var c *checksums
	for _, alg := range ChecksumAlgorithms {
		name := "x-amz-checksum-" + alg
		v := r.Header.Get(name)
		if v == "" {
			continue
		}
		if c == nil {
			c = &checksums{}
		}
		c.add(name, v)
	}
	if c != nil && len(c.names) > 1 {
		return nil, newErr(ErrInvalidChecksum, "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
	}
	return c, nil
}

// trailerChecksums prepares the checksums declared by x-amz-trailer.
func trailerChecksums(declared []string) (*checksums, error) {
	c := &checksums{}
	for _, v := range declared {
		for _, name := range strings.Split(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			if NewChecksumHash(strings.TrimPrefix(name, "x-amz-checksum-")) == nil || !strings.HasPrefix(name, "x-amz-checksum-") {
				return nil, newErr(ErrInvalidChecksum, "The value specified in the x-amz-trailer header is not supported: %q", name)
			}
			c.add(name, "")
		}
	}
	return c, nil
}
