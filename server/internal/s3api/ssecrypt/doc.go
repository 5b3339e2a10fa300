// Package ssecrypt is the at-rest format of latchkey's SSE-S3 objects:
// a master key, per-body data keys wrapped by it, and bodies sealed with
// AES-256-GCM in fixed-size chunks so that a range read decrypts only the
// chunks it covers. It knows nothing of HTTP or of the engine; the S3
// handler (server/internal/s3api) seals what it ingests and opens what it serves.
//
// # Keys
//
// The master key is 32 random bytes (Load, LoadOrCreate). It is never
// used directly: HKDF-SHA256 derives from it the key-wrapping key and an
// 8-byte key ID (KeyID), which every sealed body carries so that a body
// sealed under another master key is refused by name (ErrWrongKey), never
// decrypted into garbage. Every sealed body has its own random 256-bit
// data key, wrapped with AES-256-GCM under the key-wrapping key; the
// wrap's additional data is the header's fixed fields and the object's
// identity (bucket and key, length-prefixed), so a body moved to another
// name does not open.
//
// # Format of a sealed body
//
//	header (73 bytes): "LKSE" | version 1 | key ID (8) | wrap nonce (12) | wrapped data key (32+16)
//	chunk 0 .. n-1:   AES-256-GCM(data key, nonce = BE64(i) | 0000, plaintext[i*ChunkSize:][:ChunkSize],
//	                               additional data = BE64(i) | final flag)
//
// Every chunk holds ChunkSize plaintext bytes except the last, which holds
// 0..ChunkSize (an empty body is one empty final chunk). A chunk's index is
// its nonce and is authenticated, so chunks cannot be reordered; the final
// flag is authenticated, so a body cut at a chunk boundary or extended does
// not open. Nonces never repeat under one data key, since each data key
// seals exactly one body. The sealed size is SealedSize(plaintext size).
//
// What it does not do: it does not hide object sizes or names (they are
// in the metadata), nor protect against someone who can read the master
// key, nor stop someone who can write the metadata database from
// replacing a version by an older sealed body of the same key.
package ssecrypt
