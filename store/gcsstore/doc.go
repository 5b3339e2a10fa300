// Package gcsstore is the store contract over Google Cloud Storage (and
// GCS-compatible servers such as fake-gcs-server), through its JSON API
// spoken with net/http: five calls (objects get, with alt=media or for
// metadata; multipart insert; delete; list). It does not use the official
// client cloud.google.com/go/storage, which links gRPC, xDS and
// OpenTelemetry (about 30 MB of the latchkey binary) for what these five
// requests do; authentication is golang.org/x/oauth2/google's
// application default credentials.
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
// finalizes, so of N racing conditional writers exactly one wins; the
// loser's upload answers 412. IfMatch of a version that is not a positive
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
// Every request's error goes through one function (classify) onto the
// store error set: 412 conditionNotMet → ErrConflict; 404 on a read (a
// missing object or bucket) → ErrNotFound; 404 on a conditional delete →
// ErrConflict; 404 on an upload (a missing bucket) → ErrNotFound; 408,
// 429 or 5xx on a read → ErrTransient; 408, 429 or 5xx or a timeout after
// a write was sent → ErrUnknownOutcome (GCS throttles at about one write
// per second per object, and a 429 does not prove the write was not
// applied); other 4xx → ErrUnsupported. The raw status and reason (from
// the JSON error body) stay in the *store.OpError. A 2xx answer the store
// cannot use (not the JSON expected, no generation, longer than its limit:
// 1 MiB for an object's metadata, 16 MiB for a list page) counts as no
// answer.
//
// A resent conditional upload that already won answers 412: it would look
// lost. So nothing resends a write blindly: each upload is one multipart
// request with a Content-Length (a body cut short is never a complete
// request), and every write carries a fresh 128-bit nonce in its custom
// metadata (latchkey-nonce). When a write's outcome is unknown,
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
// committed and been overwritten since. A read (Get, a metadata read, one
// list page) is retried on 408, 429, 5xx and transport errors as the
// official client does, bounded to 4 attempts with full-jitter backoff
// from 1 s (internal/backoff); a read that still fails is ErrTransient.
// Get and GetStream check the value against the CRC32C in X-Goog-Hash
// when the server sends one and the bytes are not transcoded; a mismatch
// fails the read.
//
// # Keys, listing, streaming
//
// Keys live under the store's prefix (gs://bucket/prefix → objects
// "prefix/<key>"), and prefix plus key must fit GCS's 1024-byte name
// limit. List reads objects.list pages by prefix and startOffset (After
// followed by a NUL byte), selecting only names and generations, until it
// has one name more than its page; at most 64 requests per call (GCS may
// answer short or empty pages), after which it returns the names it has
// with Next set, or ErrTransient when it has none. PutStream streams an
// io.ReadSeeker (from its offset to its end) in one upload request with
// no buffer; any other reader is first spooled to a temporary file, so a
// reader that fails part-way fails the Put before anything is sent.
// Memory stays bounded either way. GetStream streams one download
// response, so its bytes are those of the generation it returns; a
// connection broken mid-value fails the reader (it is not resumed).
//
// # Connecting
//
// With no Options.Endpoint the store talks to
// https://storage.googleapis.com/storage/v1/ with application default
// credentials (golang.org/x/oauth2/google: GOOGLE_APPLICATION_CREDENTIALS,
// gcloud's user credentials, or the metadata server on Google Cloud;
// scopes devstorage.full_control and cloud-platform), which Open finds and
// fails without; the token source is kept past Open's context. If
// STORAGE_EMULATOR_HOST is set (host:port, or a URL), the store talks to
// that emulator instead, without authentication, as the official client
// does. With an Endpoint (a JSON API base URL such as
// http://127.0.0.1:4443/storage/v1/) authentication is off; uploads go to
// /upload/storage/v1/ on the same host. Options.HTTPClient replaces the
// store's own client and is used as it is (it must authorize requests
// itself for Google Cloud Storage).
package gcsstore
