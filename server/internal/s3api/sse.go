package s3api

import (
	"io"
	"net/http"

	"github.com/latchkey/latchkey/server/internal/s3api/ssecrypt"
	"github.com/latchkey/latchkey/server/internal/s3model"
)

// Server-side encryption: SSE-S3 (x-amz-server-side-encryption: AES256)
// is implemented; an object written with it, or into a bucket whose
// default encryption is AES256, is sealed at rest under the server's
// master key (Options.SSE; the format is package ssecrypt's) and every
// response about it carries the header. Objects written without it are
// stored as sent and no response claims otherwise (docs/wire-s3.md,
// "Server-side encryption", says why the AWS default of encrypting every
// object is not followed). SSE-KMS is answered as AWS answers a KMS key
// the caller cannot use, and SSE-C as AWS answers it on a bucket where it
// is blocked (its default since April 2026).

// sseHeaders are the request headers that ask for server-side encryption
// of the object written.
var sseHeaders = []string{
	"x-amz-server-side-encryption",
	"x-amz-server-side-encryption-aws-kms-key-id",
	"x-amz-server-side-encryption-context",
	"x-amz-server-side-encryption-bucket-key-enabled",
	"x-amz-server-side-encryption-customer-algorithm",
	"x-amz-server-side-encryption-customer-key",
	"x-amz-server-side-encryption-customer-key-md5",
}

// Indexes into sseHeaders.
const (
	sseAlg = iota
	sseKMSKeyID
	sseKMSContext
	sseBucketKey
	sseCustomerFirst // this and the rest are SSE-C's
)

// sseCopySourceHeaders give the key of an SSE-C copy source.
var sseCopySourceHeaders = []string{
	"x-amz-copy-source-server-side-encryption-customer-algorithm",
	"x-amz-copy-source-server-side-encryption-customer-key",
	"x-amz-copy-source-server-side-encryption-customer-key-md5",
}

// The canonical forms of the names above, computed once (a lookup with
// them allocates nothing).
var (
	sseHeaderKeys     = canonicalKeys(sseHeaders)
	sseCopySourceKeys = canonicalKeys(sseCopySourceHeaders)
)

// canonicalKeys returns the canonical header keys of names.
func canonicalKeys(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = http.CanonicalHeaderKey(n)
	}
	return out
}

// sseOp is how an object operation treats the encryption headers (the
// spec table of docs/wire-s3.md).
type sseOp int

const (
	// sseRead: GetObject, HeadObject and the other reads take none.
	sseRead sseOp = iota
	// sseWrite: PutObject, CreateMultipartUpload and CopyObject take
	// x-amz-server-side-encryption for the object written.
	sseWrite
	// ssePart: UploadPart, UploadPartCopy and CompleteMultipartUpload
	// refuse it (the upload's encryption was chosen at create).
	ssePart
	// sseOther: delete, tagging, abort.
	sseOther
)

// objectSSEOp classifies an object request as routeObject will route it.
func objectSSEOp(q *request, m string) sseOp {
	switch m {
	case http.MethodGet, http.MethodHead:
		return sseRead
	case http.MethodPut:
		switch {
		case q.has("tagging"):
			return sseOther
		case q.has("uploadId"):
			return ssePart
		}
		return sseWrite
	case http.MethodPost:
		switch {
		case q.has("uploads"):
			return sseWrite
		case q.has("uploadId"):
			return ssePart
		}
	}
	return sseOther
}

// msgSSENotSupported is S3's answer to x-amz-server-side-encryption on an
// operation that does not take it.
const msgSSENotSupported = "x-amz-server-side-encryption header is not supported for this operation."

// checkSSE validates the encryption headers of an object request and
// returns the encryption it asks for ("" or s3model.SSEAES256; only
// sseWrite operations ask). Anything else is refused before the request
// changes anything:
//   - an unknown x-amz-server-side-encryption value: 400 InvalidArgument;
//   - the header on an operation that does not take it: 400
//     InvalidArgument "… not supported for this operation.";
//   - aws:kms, aws:kms:dsse: 400 KMS.NotFoundException, as AWS answers a
//     KMS key that does not exist (no KMS key exists here); a KMS key id
//     or context without aws:kms: 400 InvalidArgument;
//   - SSE-C on a write: 403 AccessDenied, as AWS answers on a bucket
//     where SSE-C is blocked; with x-amz-server-side-encryption too, 400
//     InvalidArgument; SSE-C parameters on a read or for a copy source:
//     400 InvalidRequest (no object here is SSE-C); on a part: 400
//     InvalidRequest (the upload was not SSE-C);
//   - AES256 without a master key (Options.SSE nil): 501 NotImplemented.
func (h *Handler) checkSSE(q *request, op sseOp) (string, error) {
	r := q.r
	alg := r.Header.Get("X-Amz-Server-Side-Encryption")
	switch alg {
	case "", s3model.SSEAES256, "aws:kms", "aws:kms:dsse":
	default:
		return "", errInvalidArgument("The encryption method specified is not supported", "x-amz-server-side-encryption", alg)
	}
	present := func(i int) bool { _, ok := r.Header[sseHeaderKeys[i]]; return ok }
	customer := false
	for i := sseCustomerFirst; i < len(sseHeaders); i++ {
		customer = customer || present(i)
	}
	for _, key := range sseCopySourceKeys {
		if _, ok := r.Header[key]; ok {
			return "", errInvalidRequest("The encryption parameters are not applicable to this object.")
		}
	}
	if op != sseWrite {
		for i := range sseCustomerFirst {
			if present(i) {
				return "", errInvalidArgument(msgSSENotSupported, sseHeaders[i], r.Header.Get(sseHeaders[i]))
			}
		}
		switch {
		case customer && op == ssePart:
			return "", errInvalidRequest("The provided encryption parameters did not match the ones used originally.")
		case customer:
			return "", errInvalidRequest("The encryption parameters are not applicable to this object.")
		}
		return "", nil
	}
	kms := alg == "aws:kms" || alg == "aws:kms:dsse"
	switch {
	case customer && alg != "":
		return "", errInvalidArgument("Server Side Encryption with Customer provided key is incompatible with the encryption method specified",
			"x-amz-server-side-encryption", alg)
	case customer:
		e := errAccessDenied()
		e.Message = "Server-side encryption with customer-provided keys (SSE-C) is blocked for this bucket"
		return "", e
	case !kms && (present(sseKMSKeyID) || present(sseKMSContext)):
		return "", errInvalidArgument("Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms",
			"x-amz-server-side-encryption", alg)
	case kms:
		return "", errKMSKey(r.Header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"))
	case alg == s3model.SSEAES256 && h.opts.SSE == nil:
		return "", errNotImplementedHeader("x-amz-server-side-encryption", "no SSE master key is configured")
	}
	return alg, nil
}

// errKMSKey is AWS's answer for a KMS key that does not exist; without a
// key id the request named the account's default key.
func errKMSKey(id string) *Error {
	if id == "" {
		id = "alias/aws/s3"
	}
	return newErr(http.StatusBadRequest, "KMS.NotFoundException", "Invalid keyId '"+id+"'")
}

// objectSSE is the encryption of an object written to bucket: the
// request's (alg) or else the bucket's default.
func (h *Handler) objectSSE(bucket, alg string) (string, error) {
	if alg != "" || h.opts.SSE == nil {
		return alg, nil
	}
	b, err := h.m.Bucket(bucket)
	if err != nil {
		return "", err
	}
	return b.SSE, nil
}

// sealingFor is how ingest stores a body of bucket/key encrypted with sse
// (nil: as sent).
func (h *Handler) sealingFor(sse, bucket, key string) *sealing {
	if sse == "" {
		return nil
	}
	return &sealing{k: h.opts.SSE, bucket: bucket, key: key}
}

// sealing seals a body under the master key, bound to its object's name.
type sealing struct {
	k           *ssecrypt.Keyring
	bucket, key string
}

// setSSEHeader answers the object's encryption (none: no header).
func setSSEHeader(w http.ResponseWriter, sse string) {
	if sse != "" {
		w.Header().Set("X-Amz-Server-Side-Encryption", sse)
	}
}

// openSealed returns the reader of n plaintext bytes at off of a sealed
// body of bucket/key; size is its plaintext size.
func (h *Handler) openSealed(src io.ReaderAt, size int64, bucket, key string, off, n int64) (io.Reader, error) {
	if h.opts.SSE == nil {
		return nil, errNotImplementedHeader("x-amz-server-side-encryption", "the object is encrypted and no SSE master key is configured")
	}
	return h.opts.SSE.OpenRange(src, size, bucket, key, off, n)
}
