// Package azblobstore is the store contract over Azure Blob Storage (and
// Azurite, its emulator), through the official SDK
// github.com/Azure/azure-sdk-for-go/sdk/storage/azblob.
//
// # Atomicity
//
// Create-if-absent is Put Blob with If-None-Match: *, compare-and-swap is
// Put Blob with If-Match: <ETag>, compare-and-delete is Delete Blob with
// If-Match: <ETag>. Azure evaluates the condition atomically with the
// write, so of N racing conditional writers exactly one wins. A lost
// create is 409 BlobAlreadyExists (some reports say 412 ConditionNotMet);
// a lost If-Match, also on a missing blob, is 412 ConditionNotMet: all are
// ErrConflict.
//
// # Versions
//
// A Version is the blob's ETag, quoted. Azure ETags are per write, not
// content hashes: the same bytes written twice get two ETags (tested
// against Azurite), so If-Match sees an A→B→A overwrite and a key created
// again after a Delete gets a new version. So, unlike s3store, no header
// is added: the blob is exactly the value. Every write carries a fresh
// random nonce in its metadata (x-ms-meta-latchkeynonce) to resolve
// ambiguous outcomes.
//
// Azurite's ETag is its clock in milliseconds times a random integer in
// [70000, 100000], so two writes of one blob within the same millisecond
// get the same ETag with probability 1/30001, and a stale If-Match could
// then pass. Real Azure changes the ETag on every write; treat Azurite as
// a test peer, not as a production store.
//
// # Errors and ambiguous outcomes
//
// Every SDK error goes through one function (classify, which documents the
// table) onto the store error set. The SDK's automatic retries are off for
// writes: a resent conditional write that already won would answer 409 or
// 412 and look lost. When a write's outcome is unknown (a timeout, a
// reset, a 5xx such as 503 ServerBusy or 500 OperationTimedOut), Put
// resolves it a bounded number of times with jittered backoff: it reads
// the blob's properties and, if the nonce is ours, the write won;
// otherwise an if-match write is resent with the same nonce and
// condition — at most one attempt can commit. An unconditional or
// if-absent write is never resent (its first copy may still land after a
// resend was reported done, undoing later writes or recreating a deleted
// blob): a Put without our nonce seen, and any unconditional Delete of
// unknown outcome, stay ErrUnknownOutcome. What it cannot decide stays
// ErrUnknownOutcome, never ErrConflict. Reads use the SDK's standard
// retries; a 503 or 500 on a read that outlasts them is ErrTransient.
//
// # Keys and blob names
//
// Keys live under the store's prefix (Options.Prefix "jobs" → blob
// "jobs/<key>"). Azure turns '\' in a blob name into '/', so a key's '\'
// is stored as "%5C" and its '%' as "%25" (one-to-one); other keys are
// their blob names. A blob name is at most 1,024 bytes here, prefix
// included. Azure advises against path segments that end in '.'; such
// keys work on Azurite but are untested on Azure.
//
// # Listing
//
// List is the container's flat listing with the prefix. Items come in the
// byte order of blob names, which is key order except where a key holds
// '%' or '\' (escaped). Azure resumes a listing only from its own opaque
// marker, so Page.Next is the page's last key and the store remembers
// (up to 1,024 of) the markers that follow such keys; an After the store
// has no marker for, e.g. from another process, is served by listing from
// the start of the prefix and skipping — correct, but it costs a scan.
//
// # Limits
//
// Put sends the value as one Put Blob (Azure's limit: 5,000 MiB, held in
// memory by the caller anyway). PutStream takes up to 50,000 blocks of
// 4 MiB (about 195 GiB). A blob name is at most 1,024 bytes, prefix and
// escapes included; a List page at most 5,000 items (Azure's page).
//
// # Streaming
//
// PutStream holds at most one 4 MiB block in memory: a value that fits
// is one Put Blob; a longer one is staged as uncommitted blocks (Put Block,
// invisible, retried by the SDK) and published by one Put Block List with
// the condition and nonce, resolved like Put. A commit discards other
// writers' uncommitted blocks of the same blob, so of two streamed writes
// racing on one key, the later commit may fail with 400 InvalidBlockList:
// ErrTransient. GetStream is Get Blob; the SDK resumes an interrupted body
// with If-Match on the returned ETag, so it yields exactly that version.
//
// # Azure native leases
//
// The store does not use Azure's own blob leases. A blob someone else
// leased refuses our writes with 412 Lease…: ErrUnsupported.
package azblobstore
