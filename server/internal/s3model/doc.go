// Package s3model is the S3 object model of latchkey's server: buckets,
// object versions and delete markers, listings, multipart uploads and the
// metadata kept with each version (tags, checksums, stored headers), in
// the durable engine (server/internal/engine). The HTTP layer, server/internal/s3api, is
// a thin adapter over it: it parses and validates a request, calls one
// Model method, and renders the result or the error as S3 does. Only this
// package knows the layout on disk.
//
// Every Model method is one engine transaction (View or Update). Write
// preconditions are decided by the caller's pure Check function, run
// inside the Update that publishes the write against the key's State at
// commit, so of N concurrent create-if-absent writes exactly one
// succeeds. Blobs (object and part bodies) are written by the caller
// before the Update names them; blobs a committed Update released are
// removed after it, and a failed removal leaves an orphan for the
// engine's sweep at Open (LiveBlobs names the live ones).
//
// # Layout on disk
//
// Metadata lives in raw engine buckets ("tables"; the engine namespaces
// them), values are JSON records (records.go):
//
//	s3b  bucket name                          → Bucket
//	s3v  bucket "/" key "\x00" ^index (8 BE)  → Version (object or marker), newest first
//	s3d  same key as s3v                      → inline body of a small object
//	s3m  bucket "/" key                       → index of the key's last mutation (8 BE)
//	s3u  bucket "/" key "\x00" uploadID       → Upload
//	s3p  uploadID "/" partNumber (4 BE)       → Part
//	s3k  "master"                             → ID of the SSE master key that sealed bodies here (sse.go)
//
// Bucket names cannot contain "/" and keys cannot contain NUL (ValidKey),
// so every composite key is unambiguous and s3v sorts by object key, then
// newest version first: the current version of a key is its first s3v
// entry, and a version ID (VersionID) is the hex of ^index, so IDs sort
// newest first too. Objects written while versioning is not enabled have
// the version ID NullVersion, and a new one replaces the old.
//
// The s3m record is the multipart and conditional-write 409 rule's
// memory (docs/wire-s3.md, "Concurrent writes"): a conditional write
// snapshots it when it starts (Precheck; CreateUpload for multipart) and a
// different value at commit is a conflict. A key with no version and no
// upload keeps no record, except while a conditional write is in flight on
// it (BeginConditional), so deleted keys leave nothing behind.
//
// Every mutation touches the engine watch name "\x00s3/" bucket "/" key
// (uploads: "\x00s3u/" uploadID), and so consumes the Update's index.
//
// The engine's bucket and cursor types are named in layout.go only, and
// tables are opened only through readTable and writeTable there.
package s3model
