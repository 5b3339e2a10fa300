// Package sigv4 verifies AWS Signature Version 4 on requests to latchkey's
// S3-compatible API.
//
// A Verifier checks one request at the top of the S3 handler and hands back
// the authenticated access key and the request body to read in its place:
//
//	accessKey, body, err := v.Verify(r)
//	if err != nil { /* render err.(*sigv4.Error) as an S3 XML error */ }
//	defer body.Close()
//
// It accepts both forms SigV4 travels in — the Authorization header and
// presigned query URLs (X-Amz-Algorithm … X-Amz-Signature) — and every
// payload mode current SDKs send:
//
//   - UNSIGNED-PAYLOAD: the body is passed through as is.
//   - a hex SHA-256 in x-amz-content-sha256: the body is hashed while it is
//     read, never buffered whole; the read that would return io.EOF returns
//     XAmzContentSHA256Mismatch instead when the digest differs.
//   - STREAMING-AWS4-HMAC-SHA256-PAYLOAD: aws-chunked, each chunk signed and
//     chained to the previous signature (the first to the header's).
//   - STREAMING-UNSIGNED-PAYLOAD-TRAILER: aws-chunked with trailing checksum
//     headers (x-amz-checksum-crc32, -crc32c, -crc64nvme, -sha1, -sha256).
//   - STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: signed chunks plus a signed
//     trailer.
//
// Checksums named by x-amz-checksum-* (as a header or as a trailer) are
// computed while streaming and verified at the end of the body (BadDigest).
// A chunk is passed to the reader before its signature is known to be good,
// so a handler must not publish what it read until Read returned io.EOF:
// every failure is reported before EOF, never after.
//
// A good signature is not enough: Verify also refuses (403 AccessDenied,
// ErrHeadersNotSigned with HeadersNotSigned naming them, as S3 does) a
// request carrying any x-amz-* header but x-amz-content-sha256 that
// SignedHeaders leaves out, and with header auth any unsigned header S3
// stores with an object (Content-Type, Content-Encoding, Cache-Control,
// Content-Disposition, Content-Language, Expires). It then rebinds every
// signed header to its canonical, signed form, so that what the handler
// reads is what was signed.
//
// A server that also serves unsigned requests (latchkey serve --anonymous)
// reads their bodies through Dechunk, which decodes and verifies an unsigned
// aws-chunked body (STREAMING-UNSIGNED-PAYLOAD-TRAILER) the same way and
// passes any other body through.
//
// Errors are *Error values carrying the S3 error code and HTTP status
// (AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch,
// RequestTimeTooSkewed, XAmzContentSHA256Mismatch, …), from Verify and from
// the returned body's Read alike.
package sigv4
