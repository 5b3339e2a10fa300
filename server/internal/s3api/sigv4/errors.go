package sigv4

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is a verification failure in S3 terms: the error code, the HTTP
// status S3 answers it with, and a message for the XML error body.
type Error struct {
	Code    string // S3 error code, e.g. "SignatureDoesNotMatch"
	Status  int    // HTTP status, e.g. 403
	Message string // human-readable message for <Message>
	// HeadersNotSigned, when set, is S3's <HeadersNotSigned> element: the
	// x-amz-* headers present but not signed, ", "-separated.
	HeadersNotSigned string
}

func (e *Error) Error() string { return fmt.Sprintf("sigv4: %s: %s", e.Code, e.Message) }

// Is matches another *Error with the same Code, so that
// errors.Is(err, sigv4.ErrSignatureDoesNotMatch) works whatever the message.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

func newErr(tmpl *Error, format string, args ...any) *Error {
	msg := tmpl.Message
	if format != "" {
		msg = fmt.Sprintf(format, args...)
	}
	return &Error{Code: tmpl.Code, Status: tmpl.Status, Message: msg, HeadersNotSigned: tmpl.HeadersNotSigned}
}

// The errors Verify and the body reader return, matched with errors.Is.
var (
	ErrAccessDenied = &Error{Code: "AccessDenied", Status: http.StatusForbidden,
		Message: "Access Denied."}
	ErrInvalidAccessKeyID = &Error{Code: "InvalidAccessKeyId", Status: http.StatusForbidden,
		Message: "The AWS Access Key Id you provided does not exist in our records."}
	ErrSignatureDoesNotMatch = &Error{Code: "SignatureDoesNotMatch", Status: http.StatusForbidden,
		Message: "The request signature we calculated does not match the signature you provided. Check your key and signing method."}
	ErrRequestTimeTooSkewed = &Error{Code: "RequestTimeTooSkewed", Status: http.StatusForbidden,
		Message: "The difference between the request time and the server's time is too large."}
	ErrExpiredPresign = &Error{Code: "AccessDenied", Status: http.StatusForbidden,
		Message: "Request has expired"}
	ErrAuthorizationHeaderMalformed = &Error{Code: "AuthorizationHeaderMalformed", Status: http.StatusBadRequest,
		Message: "The authorization header is malformed."}
	ErrAuthorizationQueryParametersError = &Error{Code: "AuthorizationQueryParametersError", Status: http.StatusBadRequest,
		Message: "Error parsing the X-Amz-Credential parameter."}
	ErrUnsupportedSignature = &Error{Code: "InvalidRequest", Status: http.StatusBadRequest,
		Message: "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256."}
	ErrMissingContentSHA256 = &Error{Code: "InvalidRequest", Status: http.StatusBadRequest,
		Message: "Missing required header for this request: x-amz-content-sha256"}
	ErrInvalidContentSHA256 = &Error{Code: "InvalidArgument", Status: http.StatusBadRequest,
		Message: "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value."}
	ErrContentSHA256Mismatch = &Error{Code: "XAmzContentSHA256Mismatch", Status: http.StatusBadRequest,
		Message: "The provided 'x-amz-content-sha256' header does not match what was computed."}
	ErrMissingDecodedLength = &Error{Code: "MissingContentLength", Status: http.StatusLengthRequired,
		Message: "You must provide the x-amz-decoded-content-length HTTP header."}
	ErrIncompleteBody = &Error{Code: "IncompleteBody", Status: http.StatusBadRequest,
		Message: "You did not provide the number of bytes specified by the Content-Length HTTP header."}
	ErrMalformedChunk = &Error{Code: "IncompleteBody", Status: http.StatusBadRequest,
		Message: "The aws-chunked body is malformed."}
	ErrBadDigest = &Error{Code: "BadDigest", Status: http.StatusBadRequest,
		Message: "The checksum you specified did not match the calculated checksum."}
	ErrInvalidChecksum = &Error{Code: "InvalidRequest", Status: http.StatusBadRequest,
		Message: "The checksum header or trailer is invalid."}
)
