package s3api

import "net/http"

// Server-side encryption is not implemented: objects are stored as sent.
// A request that asks for SSE (S3-managed, KMS or customer keys) is refused
// rather than answered as if the object were encrypted, and no response
// carries x-amz-server-side-encryption. The blob files are as protected as
// the data directory is (docs/wire-s3.md).

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

// checkSSE refuses object requests that carry encryption headers: an
// unknown x-amz-server-side-encryption value is 400 InvalidArgument as on
// S3; SSE-C parameters on a read (or for a copy source) are 400
// InvalidRequest, S3's answer for an object that is not encrypted with a
// customer key, which no object here is; any other is 501 NotImplemented
// naming the header.
func checkSSE(r *http.Request) error {
	if v := r.Header.Get("X-Amz-Server-Side-Encryption"); v != "" {
		switch v {
		case "AES256", "aws:kms", "aws:kms:dsse":
		default:
			return errInvalidArgument("The encryption method specified is not supported", "x-amz-server-side-encryption", v)
		}
	}
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	for i, name := range sseHeaders {
		if _, ok := r.Header[sseHeaderKeys[i]]; !ok {
			continue
		}
		if read {
			return errInvalidRequest("The encryption parameters are not applicable to this object.")
		}
		return errNotImplementedHeader(name, "")
	}
	for _, key := range sseCopySourceKeys {
		if _, ok := r.Header[key]; ok {
			return errInvalidRequest("The encryption parameters are not applicable to this object.")
		}
	}
	return nil
}
