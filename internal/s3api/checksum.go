package s3api

import (
	"bytes"
	"encoding/base64"
	"hash"
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/internal/s3api/sigv4"
)

// The SigV4 verifier checks x-amz-checksum-* headers of the signed PUT
// bodies it de-chunks (AUTH-SEAM.md). Two bodies are left to us: unsigned
// requests served in anonymous mode, which never reach the verifier, and
// DeleteObjects, a POST whose checksum header describes its XML body.
// (CompleteMultipartUpload's checksum headers describe the whole object,
// not the request body, and are not checked here.)

// bodyChecksum is the x-amz-checksum-* header of a request body, hashed
// while the body streams through it (it is an io.Writer).
type bodyChecksum struct {
	alg  string
	h    hash.Hash
	want []byte
}

func (c *bodyChecksum) Write(p []byte) (int, error) { return c.h.Write(p) }

// requestChecksum parses the request's x-amz-checksum-* header: nil when
// there is none; InvalidRequest for two of them or a malformed value.
func requestChecksum(r *http.Request) (*bodyChecksum, error) {
	var c *bodyChecksum
	for _, alg := range sigv4.ChecksumAlgorithms {
		name := "x-amz-checksum-" + alg
		v := r.Header.Get(name)
		if v == "" {
			continue
		}
		if c != nil {
			return nil, errInvalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
		}
		h := sigv4.NewChecksumHash(alg)
		want, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(want) != h.Size() {
			return nil, errInvalidRequest("Value for " + name + " header is invalid.")
		}
		c = &bodyChecksum{alg: alg, h: h, want: want}
	}
	return c, nil
}

// verify compares the digest of what was written with the header's.
func (c *bodyChecksum) verify() error {
	if c == nil || bytes.Equal(c.h.Sum(nil), c.want) {
		return nil
	}
	return newErr(http.StatusBadRequest, "BadDigest",
		"The "+strings.ToUpper(c.alg)+" you specified did not match the calculated checksum.")
}
