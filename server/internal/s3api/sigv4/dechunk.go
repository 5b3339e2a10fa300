package sigv4

import (
	"io"
	"net/http"
	"strings"
)

// Dechunk returns the body of an unsigned request to read in place of
// r.Body. A server that serves anonymous requests calls it where it would
// call Verify for signed ones: an unsigned request never reaches Verify,
// yet real clients with anonymous credentials still send aws-chunked
// bodies with a trailing checksum (aws-sdk-go-v2 over https, boto3 with
// botocore.UNSIGNED over https, both with STREAMING-UNSIGNED-PAYLOAD-TRAILER).
//
// The body is aws-chunked when x-amz-content-sha256 is
// STREAMING-UNSIGNED-PAYLOAD-TRAILER, or when Content-Encoding lists
// aws-chunked and x-amz-content-sha256 is absent (an unsigned client need
// not send it). Such a body is decoded while it
// streams, exactly as Verify decodes it: chunks of at most
// DefaultMaxChunkSize bytes, a trailer section of at most 16 KiB, the
// decoded total equal to x-amz-decoded-content-length (411
// MissingContentLength when absent), and every checksum declared in
// x-amz-trailer verified at the end, the read that would return io.EOF
// returning BadDigest (or IncompleteBody, InvalidRequest) instead. As with
// Verify, nothing read may be published before Read returned io.EOF.
// On success r is normalized as Verify normalizes it: r.ContentLength is
// the decoded length and "aws-chunked" is removed from Content-Encoding.
//
// Any other body (not aws-chunked) is returned as it is: Dechunk checks no
// payload hash or x-amz-checksum-* header on it.
//
// Errors are *Error: InvalidRequest for signed streaming modes
// (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER], which need the seed
// signature of an Authorization header) and for aws-chunked with another
// x-amz-content-sha256; MissingContentLength; InvalidRequest for an
// unsupported x-amz-trailer. The returned body implements Body and closes
// r.Body when closed.
func Dechunk(r *http.Request) (io.ReadCloser, error) {
	src := r.Body
	if src == nil {
		src = http.NoBody
	}
	mode := r.Header.Get("X-Amz-Content-Sha256")
	switch {
	case mode == StreamingUnsignedTrailer:
	case mode == StreamingSigned || mode == StreamingSignedTrailer:
		return nil, newErr(errUnsignedStreaming, "x-amz-content-sha256 %s needs a signed request; sign it or send STREAMING-UNSIGNED-PAYLOAD-TRAILER", mode)
	case !awsChunked(r):
		return src, nil
	case mode != "":
		return nil, newErr(errUnsignedStreaming, "Content-Encoding aws-chunked needs x-amz-content-sha256 %s on an unsigned request, not %q", StreamingUnsignedTrailer, mode)
	}
	cr, err := newChunkedReader(r, src, StreamingUnsignedTrailer, DefaultMaxChunkSize)
	if err != nil {
		return nil, err
	}
	return cr, nil
}

// errUnsignedStreaming is Dechunk's refusal of a payload mode it cannot
// decode without a signature.
var errUnsignedStreaming = &Error{Code: "InvalidRequest", Status: http.StatusBadRequest,
	Message: "This payload mode needs a signed request."}

// awsChunked reports whether Content-Encoding lists aws-chunked.
func awsChunked(r *http.Request) bool {
	for _, v := range r.Header.Values("Content-Encoding") {
		for _, e := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(e), "aws-chunked") {
				return true
			}
		}
	}
	return false
}
