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
// request carrying any x-amz-* header but x-amz-content-sha256, or a
// Content-MD5, that SignedHeaders leaves out (AWS's rule; Content-Type and
// the other headers S3 stores may be unsigned, as AWS allows). It then
// rebinds every signed header to its canonical, signed form, so that what
// the handler reads is what was signed.
//
// Browser form uploads (S3's PostObject) carry no signed request: their
// signature covers the base64 policy document of the form, and
// Verifier.VerifyPost checks it under the same signing key. The policy's
// conditions are the caller's to check.
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
//
// # Using it in a handler
//
// Build one Verifier at construction (New(Credentials{ak: sk}.Lookup, nil):
// nil Options accept any region, service "s3", 15 minutes of skew and
// chunks of up to DefaultMaxChunkSize). At the top of every request:
//
//	if anonymousAllowed && !sigv4.Signed(r) {
//		body, err := sigv4.Dechunk(r) // any other body comes back as is
//		...
//	} else {
//		accessKey, body, err := v.Verify(r)
//		...
//	}
//	defer body.Close()
//	r.Body = body // never read the original r.Body
//
// Call Verify before any path rewriting, and never let a mux clean the
// path: the canonical URI is built from r.URL.Path as sent (decoded once,
// AWS-encoded once, never cleaned).
//
// The body is verified while it streams, and a failure is reported by Read
// instead of io.EOF (XAmzContentSHA256Mismatch, SignatureDoesNotMatch for a
// bad chunk signature, BadDigest, IncompleteBody, InvalidRequest). So
// stream into a blob and publish only after Read returned io.EOF; reading
// exactly the declared length is not enough, because the verdict on an
// aws-chunked body (its final frame, the trailer, every checksum) comes
// from the Read after the last data byte, and io.ReadFull drops an error
// that arrives with the last bytes. The s3api handler reads once more and
// requires io.EOF (requireEOF). An error from Read that is not an *Error
// is a transport error (the client went away). After io.EOF the body's
// Checksums (the Body interface) holds the verified x-amz-checksum-*
// values.
//
// # What Verify and Dechunk change on the request
//
//   - Every signed header is rebound to its canonical, signed form
//     (several values joined with ",", runs of spaces collapsed).
//   - For aws-chunked payloads r.ContentLength becomes the decoded length
//     (x-amz-decoded-content-length) and aws-chunked is removed from
//     Content-Encoding (the header is dropped when nothing is left): use
//     r.ContentLength as the object size.
//   - For presigned URLs, signed If-None-Match / If-Match query parameters
//     are copied into r.Header, replacing an unsigned header of that name,
//     so conditional code reads headers only. The query parameters, and
//     the X-Amz-* authentication parameters, stay in r.URL: ignore the
//     latter when parsing the query.
//
// Dechunk decodes STREAMING-UNSIGNED-PAYLOAD-TRAILER (or aws-chunked
// without x-amz-content-sha256) with Verify's own decoder and limits, and
// refuses with 400 InvalidRequest the signed streaming modes (no seed
// signature without Authorization) and aws-chunked with another
// x-amz-content-sha256; 411 MissingContentLength without
// x-amz-decoded-content-length.
//
// # What the caller still checks
//
// Verify checks x-amz-checksum-* headers only on PUT bodies without
// x-amz-copy-source (plain or aws-chunked) and in every trailer. The
// handler keeps: Content-MD5 (BadDigest, InvalidDigest); checksum headers
// of POST bodies (DeleteObjects' describes its XML body, while
// CompleteMultipartUpload's describe the whole object and must not be
// checked against the body, which this package cannot tell apart);
// checksum headers of unsigned plain bodies; and authorization (there is
// one principal: any valid key may do everything).
//
// # What real clients send
//
// Measured in this package's tests and server/internal/s3interop:
// aws-sdk-go-v2 (default checksums) over http sends a hex SHA-256 and an
// x-amz-checksum-crc32 header, over https STREAMING-UNSIGNED-PAYLOAD-TRAILER
// with a trailing x-amz-checksum-crc32; minio-go over http sends signed
// chunks (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), with a signed trailer when
// it adds a checksum; presigned URLs use UNSIGNED-PAYLOAD. Anonymous
// clients over https (aws.AnonymousCredentials, botocore.UNSIGNED) send
// STREAMING-UNSIGNED-PAYLOAD-TRAILER with a trailing checksum, boto3
// inside HTTP chunked transfer encoding with Expect: 100-continue; both go
// through Dechunk.
package sigv4
