// Package s3store is the store contract over Amazon S3 and S3-compatible
// servers (latchkey's own server, Versity Gateway, MinIO, …). It speaks
// the six S3 calls it needs (GetObject, HeadObject, PutObject,
// DeleteObject, ListObjectsV2, CreateBucket) over net/http, each request
// signed with Signature Version 4 by aws-sdk-go-v2's signer, with the
// credentials, region and HTTP client of aws-sdk-go-v2's config package;
// the SDK's generated S3 client is not linked (it alone made the latchkey
// binary 7 MB larger).
//
// # Atomicity
//
// Create-if-absent is PutObject with If-None-Match: *, compare-and-swap is
// PutObject with If-Match: <ETag>, compare-and-delete is DeleteObject with
// If-Match: <ETag>. S3 evaluates the condition when the write commits, so
// of N racing conditional writers exactly one wins. A server that ignores
// these headers silently breaks every guarantee here; run `latchkey probe`
// against a new endpoint first.
//
// # Versions and the object format
//
// An object holds the value exactly as given: `aws s3 cp`, a static site
// or a dataset reader gets the bytes that were written. Each write also
// sends a fresh 128-bit random nonce as user metadata
// (x-amz-meta-latchkey-nonce), so that an ambiguous outcome can be
// resolved with a HEAD.
//
// A Version is the object's ETag (quoted, as S3 sends it). On S3 an ETag
// is the MD5 of the bytes, so the same value written twice gets the same
// version, and If-Match cannot see an A→B→A overwrite with identical
// bytes: the store does not declare store.Capabilities.UniqueVersions.
// Records that carry a nonce or live under unique names (lease records,
// publish manifests and pointers) never repeat their bytes, so they are
// not affected; plain user values are (see package cas).
//
// Objects written by s3store before this format carry a 53-byte header
// line in front of the value, with the same nonce as their metadata:
//
//	latchkey-s3store-v1 <32 hex digits of nonce>\n<value bytes>
//
// Get and GetStream strip it when the header's nonce is the metadata's
// (or the server kept no metadata), so old objects stay readable; a value
// that merely starts with such a line is left alone, because its metadata
// carries another nonce. An object written by another tool is read whole.
//
// # Errors and ambiguous outcomes
//
// Every error, an S3 error answer or the transport's, goes through one
// function (classify) onto the store error set: 412 → ErrConflict; 409 ConditionalRequestConflict →
// ErrTransient; 404 on an If-Match write or delete → ErrConflict; 404 on
// Get → ErrNotFound; 501 → ErrUnsupported; a timeout, reset or 5xx after a
// write was sent → ErrUnknownOutcome; 503 SlowDown or 5xx on a read →
// ErrTransient. The raw status and code stay in the *store.OpError.
//
// A write is sent once (a resent conditional write that already won
// answers 412 and would look lost). When a write's outcome is unknown, Put resolves it itself, a bounded number of times
// with jittered backoff: it reads the key (HEAD) and, if the stored nonce
// is ours, the write won. An unconditional or if-absent Put is never
// resent: its first copy may still be in flight, and a copy landing after
// a resend was reported done would undo every write made in between (or
// create the key again after a delete), so without our nonce seen it
// stays ErrUnknownOutcome; for the same reason an unconditional Delete of
// unknown outcome is not resent and stays ErrUnknownOutcome (a delete
// leaves no nonce to look for). An if-match write, or a conditional
// delete, is resent with the same nonce — S3 lets at most one of the
// attempts commit, unless the key is rewritten meanwhile with exactly the
// bytes it matched (no UniqueVersions). A 200 wins; a
// 412, 409 or 404 followed by a HEAD that finds our nonce wins too (the
// resend saw our own earlier write); anything else stays ErrUnknownOutcome,
// because the earlier attempt may have committed and been overwritten
// since, and calling that a conflict could make a caller apply its update
// twice. A read (GET, HEAD, list) that fails transiently is sent again,
// at most three sends in all with jittered backoff, as the SDK's standard
// retryer did.
//
// # Keys, listing, streaming
//
// Keys live under the store's prefix (s3://bucket/prefix → objects
// "prefix/<key>"). List is ListObjectsV2 with StartAfter, so it pages by
// key. PutStream sends a seekable body of known length: an io.ReadSeeker
// is streamed directly, any other reader is first spooled to a temporary
// file (memory stays bounded either way). GetStream streams GetObject.
package s3store
