package s3api

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"

	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// Error is an S3 error response: the HTTP status and the fields of the
// <Error> XML body. Handlers return *Error values (or any error, which
// becomes 500 InternalError) and writeError turns them into responses.
type Error struct {
	Status  int
	Code    string
	Message string

	// Optional elements, emitted only when set, as AWS adds them.
	Key               string
	BucketName        string
	Condition         string
	Header            string
	AdditionalMessage string
	VersionID         string
	Method            string
	ResourceType      string
	ArgumentName      string
	ArgumentValue     string
	MaxSizeAllowed    string
	ProposedSize      string
	MinSizeAllowed    string
	HeadersNotSigned  string

	// Headers are extra response headers (x-amz-delete-marker,
	// Last-Modified, ...).
	Headers http.Header
}

func (e *Error) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("s3api: %q: %s: %s", e.Key, e.Code, e.Message)
	}
	return fmt.Sprintf("s3api: %s: %s", e.Code, e.Message)
}

func (e *Error) withKey(key string) *Error { e.Key = key; return e }

func (e *Error) withHeader(k, v string) *Error {
	if e.Headers == nil {
		e.Headers = http.Header{}
	}
	e.Headers.Set(k, v)
	return e
}

// codedError lets other layers (and tests) hand the error writer an S3
// error code and status without importing this package.
type codedError interface {
	S3ErrorCode() string
	HTTPStatus() int
}

const msgPrecondition = "At least one of the pre-conditions you specified did not hold"

func newErr(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

func errPrecondition(cond string) *Error {
	e := newErr(http.StatusPreconditionFailed, "PreconditionFailed", msgPrecondition)
	e.Condition = cond
	return e
}

func errConflict(cond, key string) *Error {
	e := newErr(http.StatusConflict, "ConditionalRequestConflict",
		"The conditional request cannot succeed due to a conflicting operation against this resource.")
	e.Condition = cond
	e.Key = key
	return e
}

func errNotImplementedHeader(header, additional string) *Error {
	e := newErr(http.StatusNotImplemented, "NotImplemented",
		"A header you provided implies functionality that is not implemented")
	e.Header = header
	e.AdditionalMessage = additional
	return e
}

func errNotImplemented(msg string) *Error {
	return newErr(http.StatusNotImplemented, "NotImplemented", msg)
}

func errNoSuchKey(key string) *Error {
	return newErr(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.").withKey(key)
}

func errNoSuchVersion(key, vid string) *Error {
	e := newErr(http.StatusNotFound, "NoSuchVersion", "The specified version does not exist.").withKey(key)
	e.VersionID = vid
	return e
}

func errNoSuchBucket(bucket string) *Error {
	e := newErr(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
	e.BucketName = bucket
	return e
}

func errNoSuchUpload(uploadID string) *Error {
	return newErr(http.StatusNotFound, "NoSuchUpload",
		"The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
}

func errInvalidArgument(msg, name, value string) *Error {
	e := newErr(http.StatusBadRequest, "InvalidArgument", msg)
	e.ArgumentName = name
	e.ArgumentValue = value
	return e
}

func errMalformedXML() *Error {
	return newErr(http.StatusBadRequest, "MalformedXML",
		"The XML you provided was not well-formed or did not validate against our published schema")
}

func errMethodNotAllowed(method, resourceType string) *Error {
	e := newErr(http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.")
	e.Method = method
	e.ResourceType = resourceType
	return e
}

func errInternal() *Error {
	return newErr(http.StatusInternalServerError, "InternalError",
		"We encountered an internal error. Please try again.")
}

func errAccessDenied() *Error {
	return newErr(http.StatusForbidden, "AccessDenied", "Access Denied")
}

var (
	errBucketNotEmpty = func(b string) *Error {
		e := newErr(http.StatusConflict, "BucketNotEmpty", "The bucket you tried to delete is not empty")
		e.BucketName = b
		return e
	}
	errBucketOwned = func(b string) *Error {
		e := newErr(http.StatusConflict, "BucketAlreadyOwnedByYou",
			"Your previous request to create the named bucket succeeded and you already own it.")
		e.BucketName = b
		return e
	}
	errInvalidBucketName = func(b string) *Error {
		e := newErr(http.StatusBadRequest, "InvalidBucketName", "The specified bucket is not valid.")
		e.BucketName = b
		return e
	}
	// errInvalidURI is S3's answer to a key that is not valid UTF-8.
	errInvalidURI = func() *Error {
		return newErr(http.StatusBadRequest, "InvalidURI", "Couldn't parse the specified URI.")
	}
	errKeyTooLong = func() *Error {
		return newErr(http.StatusBadRequest, "KeyTooLongError", "Your key is too long")
	}
	errInvalidRange = func(size int64) *Error {
		e := newErr(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable")
		return e.withHeader("Content-Range", fmt.Sprintf("bytes */%d", size))
	}
	errEntityTooLarge = func() *Error {
		return newErr(http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
	}
	errEntityTooSmall = func() *Error {
		return newErr(http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
	}
	errBadDigest = func() *Error {
		return newErr(http.StatusBadRequest, "BadDigest", "The Content-MD5 you specified did not match what we received.")
	}
	errInvalidDigest = func() *Error {
		return newErr(http.StatusBadRequest, "InvalidDigest", "The Content-MD5 you specified is not valid.")
	}
	errIncompleteBody = func() *Error {
		return newErr(http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header.")
	}
	errMissingContentLength = func() *Error {
		return newErr(http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header.")
	}
	errMetadataTooLarge = func() *Error {
		return newErr(http.StatusBadRequest, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size.")
	}
	errInvalidPart = func() *Error {
		return newErr(http.StatusBadRequest, "InvalidPart",
			"One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
	}
	errInvalidPartOrder = func() *Error {
		return newErr(http.StatusBadRequest, "InvalidPartOrder",
			"The list of parts was not in ascending order. The parts list must be specified in order by part number.")
	}
	errInvalidRequest = func(msg string) *Error {
		return newErr(http.StatusBadRequest, "InvalidRequest", msg)
	}
	errRequestHeaderTooLarge = func() *Error {
		e := newErr(http.StatusBadRequest, "RequestHeaderSectionTooLarge", "Your request header section exceeds the maximum allowed size.")
		e.MaxSizeAllowed = fmt.Sprint(MaxHeaderBytes)
		return e
	}
)

// errorBody is the wire form of Error.
type errorBody struct {
	XMLName           xml.Name `xml:"Error"`
	Code              string   `xml:"Code"`
	Message           string   `xml:"Message"`
	Key               string   `xml:"Key,omitempty"`
	BucketName        string   `xml:"BucketName,omitempty"`
	VersionID         string   `xml:"VersionId,omitempty"`
	Condition         string   `xml:"Condition,omitempty"`
	Header            string   `xml:"Header,omitempty"`
	AdditionalMessage string   `xml:"additionalMessage,omitempty"`
	Method            string   `xml:"Method,omitempty"`
	ResourceType      string   `xml:"ResourceType,omitempty"`
	ArgumentName      string   `xml:"ArgumentName,omitempty"`
	ArgumentValue     string   `xml:"ArgumentValue,omitempty"`
	ProposedSize      string   `xml:"ProposedSize,omitempty"`
	MaxSizeAllowed    string   `xml:"MaxSizeAllowed,omitempty"`
	MinSizeAllowed    string   `xml:"MinSizeAllowed,omitempty"`
	HeadersNotSigned  string   `xml:"HeadersNotSigned,omitempty"`
	Resource          string   `xml:"Resource,omitempty"`
	RequestID         string   `xml:"RequestId"`
	HostID            string   `xml:"HostId"`
}

// asError converts any error into an *Error: our own, the auth seam's coded
// errors, or 500 InternalError.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var se *sigv4.Error
	if errors.As(err, &se) {
		e := newErr(se.Status, se.Code, se.Message)
		e.HeadersNotSigned = se.HeadersNotSigned
		return e
	}
	var c codedError
	if errors.As(err, &c) {
		return newErr(c.HTTPStatus(), c.S3ErrorCode(), err.Error())
	}
	return errInternal()
}

// writeError is the one place that turns an error into a response. HEAD
// requests and 304s get no body.
func writeError(w http.ResponseWriter, r *http.Request, reqID string, err error) {
	e := asError(err)
	h := w.Header()
	for k, vs := range e.Headers {
		h[k] = vs
	}
	if r.Method == http.MethodHead || e.Status == http.StatusNotModified {
		w.WriteHeader(e.Status)
		return
	}
	body := errorBody{
		Code: e.Code, Message: e.Message, Key: e.Key, BucketName: e.BucketName,
		VersionID: e.VersionID, Condition: e.Condition, Header: e.Header,
		AdditionalMessage: e.AdditionalMessage, Method: e.Method, ResourceType: e.ResourceType,
		ArgumentName: e.ArgumentName, ArgumentValue: e.ArgumentValue, MaxSizeAllowed: e.MaxSizeAllowed,
		ProposedSize: e.ProposedSize, MinSizeAllowed: e.MinSizeAllowed,
		HeadersNotSigned: e.HeadersNotSigned,
		Resource:         r.URL.EscapedPath(), RequestID: reqID, HostID: reqID,
	}
	if e.HeadersNotSigned != "" {
		body.Resource = "" // AWS's HeadersNotSigned error has none (recorded)
	}
	out, merr := marshalXML(body)
	if merr != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", fmt.Sprint(len(xml.Header)+len(out)))
	w.WriteHeader(e.Status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(out)
}

// WriteAccessDenied answers r with S3's 403 AccessDenied error body
// carrying message, for refusals decided before the S3 handler runs (the
// server's Host check).
func WriteAccessDenied(w http.ResponseWriter, r *http.Request, message string) {
	e := errAccessDenied()
	e.Message = message
	writeError(w, r, "", e)
}
