// Package s3api is the http.Handler of latchkey's S3-compatible API: buckets,
// objects, listing, multipart uploads, copy, batch delete and versioning,
// stored in the durable engine (server/internal/engine).
//
// The handler is the HTTP layer only: it authenticates, parses the request
// (the URL query once), validates it, and calls one method of the object
// model (server/internal/s3model), which runs the engine transaction and alone
// knows the records and their layout on disk; the handler renders the
// result, or the model's refusal as S3's error (modelError). Request
// bodies are its own: it streams them to engine blobs before the model
// names them. Preconditions are decided by the pure functions of cond.go,
// handed to the model as s3model.Check values that run inside the
// transaction that publishes the write.
//
// It promises the conditional-request tables of docs/wire-s3.md
// ("Conditional requests"), AWS's recorded answers: If-None-Match: * and If-Match on PutObject,
// CompleteMultipartUpload and CopyObject (destination); If-Match on
// DeleteObject and per key in DeleteObjects; the GET/HEAD validator ladder;
// 412 / 409 / 404 / 501 / 304 exactly where AWS sends them. Every write
// precondition is evaluated inside the engine transaction that publishes
// the write, so of N concurrent create-if-absent PUTs exactly one succeeds.
//
// A conditional write whose precondition still holds at commit, but whose
// key was mutated (written or deleted) after the request began — for
// multipart uploads, after CreateMultipartUpload — answers 409
// ConditionalRequestConflict, as S3 does.
//
// Every limit is explicit and answered with S3's own error (see the
// constants: object, part, key, metadata, header and XML body sizes), and a
// refused request changes nothing. Content-MD5 is checked on every body,
// x-amz-checksum-* on every body the SigV4 verifier does not check.
//
// Authentication (the auth rule; docs/security.md has the reasons): the
// handler acts only on what the SigV4 signature covers. The method, path
// and query are always signed; Host, every x-amz-* header and Content-MD5
// must be signed (x-amz-copy-source*, x-amz-metadata-directive,
// x-amz-meta-*, x-amz-checksum-*, x-amz-if-*, x-amz-tagging*, …) except
// x-amz-content-sha256, whose value the canonical request carries anyway.
// That is AWS's rule, in header auth and presigned URLs alike. Any other is
// refused before routing with 403 AccessDenied and <HeadersNotSigned>, as
// S3 does. Content-Type, Content-Encoding, Cache-Control,
// Content-Disposition, Content-Language, Expires, the If-* conditions and
// Range may be unsigned, as on AWS (minio-go v7.0.x and the JavaScript SDK
// v2 never sign Content-Type); the conditions and Range can only refuse or
// narrow what the signature allows; a presigned URL's signed If-Match or
// If-None-Match query condition is never replaced by an unsigned header.
// Signed headers reach the handler in their canonical (signed) form.
// Unsigned requests are served only with Options.Anonymous. The contract
// between the handler and the verifier (what Verify changes on the
// request, when a body's verdict arrives, what the handler still checks)
// is in the server/internal/s3api/sigv4 package doc.
//
// Bodies above a small inline threshold stream to engine blobs (fsynced
// before the metadata transaction names them), so memory does not grow with
// object size. Routing uses the escaped request path: "//" and ".." are
// legal in keys. Every failure is rendered by one function as S3's XML
// error body.
//
// Object tags, kept checksums (composite or full-object for multipart),
// GetObjectAttributes and virtual-hosted-style addressing (Options.Domain)
// are implemented. Server-side encryption is SSE-S3: an object written
// with x-amz-server-side-encryption: AES256, or into a bucket whose
// default encryption is AES256, is sealed at rest under Options.SSE's
// master key (package ssecrypt; every body its own data key, 64 KiB
// AES-256-GCM chunks so ranges and partNumber reads decrypt only what they
// serve) and answered with the header; its ETag and checksums are the
// plaintext's. Objects written without it are stored as sent and never
// claimed encrypted. SSE-KMS and SSE-C are refused with AWS's answers
// (sse.go).
// Browser form uploads (PostObject, postobject.go) authenticate from their
// fields: the SigV4 signature of the policy document (sigv4.VerifyPost),
// then the policy's expiration and every condition, and every field must
// be named by one (postpolicy.go); the file is stored as a PutObject body
// is. Known restrictions: object keys may not contain NUL; no ACLs,
// policies or lifecycle (reading one answers AWS's "none" 404, setting one
// 501). docs/wire-s3.md lists every known difference from AWS.
package s3api
