package sigv4

import (
	"net/http"
	"slices"
	"strings"
)

// ErrHeadersNotSigned is S3's answer to a request carrying x-amz-* headers
// its signature does not cover; HeadersNotSigned names them.
var ErrHeadersNotSigned = &Error{Code: "AccessDenied", Status: http.StatusForbidden,
	Message: "There were headers present in the request which were not signed"}

// unsignedHeaders returns, sorted and lower-case, the headers of r that
// must be signed and are not in the (sorted) signed list. The rule is
// AWS's, in both header auth and presigned URLs: every x-amz-* header and
// Content-MD5 (AWS answers HeadersNotSigned: content-md5, although its
// documentation calls it optional). x-amz-content-sha256 is exempt, as in
// S3: its value is the last line of the canonical request (for a presigned
// URL it is that line unless the query names one, and is then ignored), so
// the signature covers it either way. Host is required by the parser.
//
// Content-Type, Content-Encoding, Cache-Control, Content-Disposition,
// Expires, Range and If-* may go unsigned, as on AWS: minio-go v7.0.x
// (restic, mc) streams with an unsigned Content-Type and the JavaScript SDK
// v2 never signs one. Signed, they are covered like any signed header.
func unsignedHeaders(r *http.Request, signed []string) []string {
	var out []string
	for k := range r.Header {
		lk := strings.ToLower(k)
		if lk != "content-md5" && (!strings.HasPrefix(lk, "x-amz-") || lk == "x-amz-content-sha256") {
			continue
		}
		if _, found := slices.BinarySearch(signed, lk); !found {
			out = append(out, lk)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// headersNotSigned is ErrHeadersNotSigned naming the headers.
func headersNotSigned(names []string) *Error {
	e := *ErrHeadersNotSigned
	e.HeadersNotSigned = strings.Join(names, ", ")
	return &e
}

// bindSignedHeaders makes every signed header of r read as the value the
// signature covers: its canonical form (values joined with "," and runs of
// spaces collapsed). Otherwise a signed "x-amz-copy-source: /b/k,x" could
// be resent as two headers "/b/k" and "x" (the same canonical line) and the
// handler, reading the first, would act on a value nobody signed.
func bindSignedHeaders(r *http.Request, signed []string) {
	for _, h := range signed {
		switch h {
		case "host", "content-length", "transfer-encoding":
			continue // not in r.Header; net/http holds what was signed
		}
		k := http.CanonicalHeaderKey(h)
		vals := r.Header[k]
		if len(vals) == 0 {
			continue
		}
		cv := make([]string, len(vals))
		for i, v := range vals {
			cv[i] = canonicalHeaderValue(v)
		}
		if c := strings.Join(cv, ","); len(vals) != 1 || vals[0] != c {
			r.Header[k] = []string{c}
		}
	}
}
