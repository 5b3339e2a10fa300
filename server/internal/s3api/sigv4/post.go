package sigv4

import (
	"crypto/hmac"
	"net/http"
	"strings"
	"time"
)

// PostForm is the SigV4 part of a browser form upload (S3's PostObject):
// the values of the form fields x-amz-algorithm, x-amz-credential,
// x-amz-date, x-amz-signature and policy, as sent.
type PostForm struct {
	Algorithm, Credential, Date, Signature string
	// Policy is the base64 policy document exactly as sent: the signature
	// covers this text, never a re-serialization of the JSON.
	Policy string
}

// VerifyPost checks the signature of a PostObject form and returns the
// access key that signed it. The string to sign is the policy field
// itself; the key is derived from the credential's date, region and
// service, as for any SigV4 request. The policy's expiration, not
// x-amz-date, bounds the form's life (the caller checks it with the
// conditions), so the request time is not held to the clock skew; the
// credential's date must be x-amz-date's day.
//
// Errors are *Error: InvalidArgument (400) for a malformed algorithm,
// credential or date or a wrong region or service (naming the field),
// InvalidAccessKeyId, SignatureDoesNotMatch.
func (v *Verifier) VerifyPost(f PostForm) (accessKey string, err error) {
	if f.Algorithm != algorithm {
		return "", postArgError("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"")
	}
	ak, sc, err := parseCredential(f.Credential, ErrInvalidPostArgument)
	if err != nil {
		return "", err
	}
	t, err := time.Parse(amzDateFormat, f.Date)
	if err != nil {
		return "", postArgError("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
	}
	switch {
	case sc.service != v.service:
		return "", postArgError("the credential scope names service %q; expecting %q", sc.service, v.service)
	case v.region != "" && sc.region != v.region:
		return "", postArgError("the region %q is wrong; expecting %q", sc.region, v.region)
	case sc.date != t.UTC().Format(scopeDateFormat):
		return "", postArgError("the credential scope date %q does not match x-amz-date %q", sc.date, f.Date)
	}
	secret, ok := v.lookup(ak)
	if !ok {
		return "", ErrInvalidAccessKeyID
	}
	want := signHex(v.keys.get(secret, sc), f.Policy)
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(f.Signature))) {
		return "", ErrSignatureDoesNotMatch
	}
	return ak, nil
}

// ErrInvalidPostArgument is the template of VerifyPost's 400s.
var ErrInvalidPostArgument = &Error{Code: "InvalidArgument", Status: http.StatusBadRequest,
	Message: "Invalid form field"}

func postArgError(format string, args ...any) *Error {
	return newErr(ErrInvalidPostArgument, format, args...)
}
