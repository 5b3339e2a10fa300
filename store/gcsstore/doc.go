// Package gcsstore is the store contract over Google Cloud Storage (and
// GCS-compatible servers such as fake-gcs-server), through the official
// client cloud.google.com/go/storage and its JSON API.
//
// # Atomicity and versions
//
// A Version is the object's generation, in decimal. GCS gives every
// content write a new generation, so the same bytes written twice get two
// versions and an A→B→A overwrite is visible to IfMatch; no header is
// stored in front of values, which are the objects' bytes as they are.
// Create-if-absent is an upload with ifGenerationMatch=0
// (Conditions{DoesNotExist: true}), compare-and-swap an upload with
// ifGenerationMatch=<generation>, compare-and-delete a DELETE with
// ifGenerationMatch. GCS evaluates the precondition when the upload
// finalizes, so of N racing conditional writers exactly one wins; the 412
// surfaces from Writer.Close. IfMatch of a version that is not a positive
// decimal generation is a conflict without a request.
//
// A server that ignores the preconditions silently breaks every guarantee
// here; run `latchkey probe` against a new endpoint first.
// fake-gcs-server v1.56.1 honours them on uploads but deletes whatever
// generation a DELETE names: open it with Options.NoCompareAndDelete, and
// the store then declares no CompareAndDelete and refuses Delete with
// IfMatch with ErrUnsupported.
//
// # Errors and ambiguous outcomes
//
// Every client error goes through one function (classify) onto the store
// error set: 412 conditionNotMet → ErrConflict; a missing object on Get →
// ErrNotFound; 404 on a conditional delete → ErrConflict; 404 on an
// upload (a missing bucket) → ErrNotFound; 408, 429 or 5xx on a read →
// ErrTransient; 408, 429 or 5xx or a timeout after a write was sent →
// ErrUnknownOutcome (GCS throttles at about one write
// per second per object, and a 429 does not prove the write was not
// applied); other 4xx → ErrUnsupported. The raw status and reason stay in
// the *store.OpError.
//
// The client retries an upload by itself when a generation precondition
// is set, and a retried conditional upload that already won answers 412:
// it would look lost. So writes run with the client's retries off
// (storage.RetryNever on the object handle) and a single-request upload
// (ChunkSize 0), and every write carries a fresh 128-bit nonce in its
// custom metadata (latchkey-nonce). When a write's outcome is unknown,
// Put resolves it itself, a bounded number of times with jittered
// backoff: it reads the object's metadata and, if the nonce is ours, the
// write won; otherwise an if-match write is resent with the same nonce
// and precondition — at most one of the attempts can commit. An
// unconditional or if-absent write is never resent (its first copy may
// still land after a resend was reported done, undoing later writes or
// recreating a deleted object): a Put without our nonce seen, and any
// unconditional Delete of unknown outcome, stay ErrUnknownOutcome. A
// success wins; a 412 or 404 followed by a read that finds our nonce wins
// too; anything else stays ErrUnknownOutcome, because the earlier attempt may have
// committed and been overwritten since. Reads use the client's retries
// (exponential backoff with jitter), bounded to 4 attempts; a read that
// still fails is ErrTransient.
//
// # Keys, listing, streaming
//
// Keys live under the store's prefix (gs://bucket/prefix → objects
// "prefix/<key>"), and prefix plus key must fit GCS's 1024-byte name
// limit. List pages with the Objects iterator by prefix and StartOffset
// (After followed by a NUL byte), selecting only names and generations.
// PutStream streams an io.ReadSeeker in one upload request with no chunk
// buffer; any other reader is first spooled to a temporary file, so a
// reader that fails part-way fails the Put before anything is sent
// (fake-gcs-server stores a multipart upload cut off mid-body). Memory
// stays bounded either way. GetStream streams the object's bytes,
// pinned to the generation first read.
//
// # Connecting
//
// With no Options.Endpoint the client uses application default
// credentials, or the emulator that STORAGE_EMULATOR_HOST names. With an
// Endpoint (a JSON API base URL such as
// http://127.0.0.1:4443/storage/v1/) authentication is off. Reads then go
// through the JSON API, which every emulator serves at that URL.
package gcsstore
