package s3api

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// The SigV4 verifier checks x-amz-checksum-* headers of the signed PUT
// bodies it de-chunks (see the sigv4 package doc). Two bodies are left to us: unsigned
// requests served in anonymous mode, which never reach the verifier, and
// DeleteObjects, a POST whose checksum header describes its XML body.
// (CompleteMultipartUpload's checksum headers describe the whole object,
// not the request body: checkCompleteChecksum compares them with the
// checksum derived from the parts.)

// bodyChecksum is the x-amz-checksum-* header of a request body, hashed
// while the body streams through it (it is an io.Writer).
type bodyChecksum struct {
	alg  string
	h    hash.Hash
	want []byte
}

func (c *bodyChecksum) Write(p []byte) (int, error) { return c.h.Write(p) }

// checksumHeaders are the x-amz-checksum-<alg> names of
// sigv4.ChecksumAlgorithms, in order, and checksumHeaderKeys their
// canonical keys, computed once.
var (
	checksumHeaders    = checksumHeaderNames()
	checksumHeaderKeys = canonicalKeys(checksumHeaders)
)

func checksumHeaderNames() []string {
	out := make([]string, len(sigv4.ChecksumAlgorithms))
	for i, alg := range sigv4.ChecksumAlgorithms {
		out[i] = "x-amz-checksum-" + alg
	}
	return out
}

// headerValue1 is h.Get for a canonical key, without canonicalizing it.
func headerValue1(h http.Header, key string) string {
	if vs := h[key]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// requestChecksum parses the request's x-amz-checksum-* header: nil when
// there is none; InvalidRequest for two of them or a malformed value.
func requestChecksum(r *http.Request) (*bodyChecksum, error) {
	var c *bodyChecksum
	for i, alg := range sigv4.ChecksumAlgorithms {
		name := checksumHeaders[i]
		v := headerValue1(r.Header, checksumHeaderKeys[i])
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

// Checksums kept with objects. A version keeps the verified (or, for
// multipart uploads, derived) x-amz-checksum-* value and returns it on the
// write, on GET/HEAD with x-amz-checksum-mode: ENABLED and in
// GetObjectAttributes. Objects written without a checksum get none: unlike
// S3 the server adds no default CRC64NVME.

// Checksum types, as S3 names them.
const (
	checksumFullObject = "FULL_OBJECT"
	checksumComposite  = "COMPOSITE"
)

// verifiedChecksum is the x-amz-checksum-* value the body was verified
// against: the handler's own (unsigned plain bodies) or the one the SigV4
// layer verified (header or trailer). computed, when set, is the server's
// own hash of the body, used when the client sent none.
func verifiedChecksum(q *request, sum *bodyChecksum, computed *bodyChecksum) *objectChecksum {
	if sum != nil {
		return &objectChecksum{Alg: sum.alg, Value: base64.StdEncoding.EncodeToString(sum.want)}
	}
	if b, ok := q.body.(sigv4.Body); ok {
		h := b.Checksums()
		for i, alg := range sigv4.ChecksumAlgorithms {
			if v := strings.TrimSpace(headerValue1(h, checksumHeaderKeys[i])); v != "" {
				return &objectChecksum{Alg: alg, Value: v}
			}
		}
	}
	return computedChecksum(computed)
}

// computedChecksum is the server's own hash of a body (nil for none).
func computedChecksum(c *bodyChecksum) *objectChecksum {
	if c == nil {
		return nil
	}
	return &objectChecksum{Alg: c.alg, Value: base64.StdEncoding.EncodeToString(c.h.Sum(nil))}
}

// hashing returns body teed into a new hash of alg ("" : body unchanged).
func hashing(body io.Reader, alg string) (io.Reader, *bodyChecksum) {
	if alg == "" {
		return body, nil
	}
	c := &bodyChecksum{alg: alg, h: sigv4.NewChecksumHash(alg)}
	return io.TeeReader(body, c), c
}

// setChecksumHeaders answers with a kept checksum.
func setChecksumHeaders(w http.ResponseWriter, c *objectChecksum) {
	if c == nil {
		return
	}
	w.Header().Set("X-Amz-Checksum-"+c.Alg, c.Value)
	if c.Type != "" {
		w.Header().Set("X-Amz-Checksum-Type", c.Type)
	}
}

// uploadChecksum parses CreateMultipartUpload's x-amz-checksum-algorithm
// and x-amz-checksum-type: the algorithm (lower case, "" for none) and the
// type, defaulting as S3 does (FULL_OBJECT for CRC64NVME, COMPOSITE for the
// others).
func uploadChecksum(r *http.Request) (alg, typ string, err error) {
	a := strings.ToLower(r.Header.Get("X-Amz-Checksum-Algorithm"))
	typ = strings.ToUpper(r.Header.Get("X-Amz-Checksum-Type"))
	if a == "" {
		if typ != "" {
			return "", "", errInvalidRequest("The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.")
		}
		return "", "", nil
	}
	if sigv4.NewChecksumHash(a) == nil {
		return "", "", errInvalidRequest("Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]")
	}
	switch {
	case typ == "" && a == "crc64nvme":
		typ = checksumFullObject
	case typ == "":
		typ = checksumComposite
	case typ != checksumFullObject && typ != checksumComposite:
		return "", "", errInvalidRequest("Value for x-amz-checksum-type header is invalid.")
	case typ == checksumFullObject && crcPoly(a) == 0, typ == checksumComposite && a == "crc64nvme":
		return "", "", errInvalidRequest("The " + strings.ToUpper(a) + " checksum algorithm does not support the " + typ + " checksum type.")
	}
	return a, typ, nil
}

// multipartChecksum derives the object checksum of a completed upload
// from its parts' checksums: COMPOSITE is the hash of the concatenated raw
// part checksums with "-N"; FULL_OBJECT is the CRC of the whole object,
// combined from the parts' CRCs and sizes. nil when the upload declared no
// algorithm or a part lacks its checksum (written before checksums were
// kept).
func multipartChecksum(alg, typ string, parts []partRec) *objectChecksum {
	if alg == "" {
		return nil
	}
	h := sigv4.NewChecksumHash(alg)
	var crc uint64
	for i, p := range parts {
		if p.Checksum == nil || p.Checksum.Alg != alg {
			return nil
		}
		raw, err := base64.StdEncoding.DecodeString(p.Checksum.Value)
		if err != nil {
			return nil
		}
		if typ == checksumComposite {
			h.Write(raw)
			continue
		}
		v := beUint(raw)
		if i == 0 {
			crc = v
		} else {
			crc = crcCombine(alg, crc, v, p.Size)
		}
	}
	if typ == checksumComposite {
		return &objectChecksum{Alg: alg, Type: typ, Value: fmt.Sprintf("%s-%d", base64.StdEncoding.EncodeToString(h.Sum(nil)), len(parts))}
	}
	out := make([]byte, h.Size())
	for i := range out {
		out[len(out)-1-i] = byte(crc >> (8 * i))
	}
	return &objectChecksum{Alg: alg, Type: typ, Value: base64.StdEncoding.EncodeToString(out)}
}

// checkCompleteChecksum compares the object checksum a
// CompleteMultipartUpload states in x-amz-checksum-<alg> (the whole
// object's, not the request body's) with the one derived from the parts.
func checkCompleteChecksum(r *http.Request, c *objectChecksum) error {
	if c == nil {
		return nil
	}
	v, want := strings.TrimSpace(r.Header.Get("X-Amz-Checksum-"+c.Alg)), c.Value
	if c.Type == checksumComposite && !strings.Contains(v, "-") {
		// Clients state a composite checksum with or without its "-N"
		// part count (minio-go sends it without).
		want, _, _ = strings.Cut(want, "-")
	}
	if v != "" && v != want {
		return newErr(http.StatusBadRequest, "BadDigest",
			"The "+strings.ToUpper(c.Alg)+" you specified did not match the calculated checksum.")
	}
	return nil
}

// checksum is the checksum a CompleteMultipartUpload <Part> states for
// alg ("" when none).
func (p completePart) checksum(alg string) string {
	switch alg {
	case "crc32":
		return p.ChecksumCRC32
	case "crc32c":
		return p.ChecksumCRC32C
	case "crc64nvme":
		return p.ChecksumCRC64NVME
	case "sha1":
		return p.ChecksumSHA1
	case "sha256":
		return p.ChecksumSHA256
	}
	return ""
}

func beUint(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// crcPoly is the reflected polynomial and width of the CRCs that have a
// full-object multipart checksum (0 for the others).
func crcPoly(alg string) (poly uint64) {
	switch alg {
	case "crc32":
		return 0xEDB88320
	case "crc32c":
		return 0x82F63B78
	case "crc64nvme":
		return 0x9A6C9329AC4BC9B5
	}
	return 0
}

func crcWidth(alg string) uint {
	if alg == "crc64nvme" {
		return 64
	}
	return 32
}

// crcCombine is the CRC of A‖B from crc(A), crc(B) and len(B), for a
// reflected CRC with pre- and post-inversion (zlib's crc32_combine,
// generalised to the widths here): crc(A)·x^(8·len(B)) mod P ⊕ crc(B).
func crcCombine(alg string, crcA, crcB uint64, lenB int64) uint64 {
	poly, w := crcPoly(alg), crcWidth(alg)
	top := uint64(1) << (w - 1) // x^0 in the reflected representation
	mul := func(a, b uint64) uint64 {
		var p uint64
		for m := top; m != 0; m >>= 1 {
			if a&m != 0 {
				p ^= b
			}
			if b&1 != 0 {
				b = b>>1 ^ poly
			} else {
				b >>= 1
			}
		}
		return p
	}
	// x^(8·lenB): square x^(2^k) for each set bit of 8·lenB.
	p, sq := top, top>>1 // x^0, x^1
	for n := uint64(lenB) * 8; n != 0; n >>= 1 {
		if n&1 != 0 {
			p = mul(sq, p)
		}
		sq = mul(sq, sq)
	}
	return mul(p, crcA) ^ crcB
}
