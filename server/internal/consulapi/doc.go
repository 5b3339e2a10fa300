// Package consulapi is the http.Handler of latchkey's Consul-compatible
// API: /v1/kv, /v1/txn, /v1/session/* and the few agent, status, catalog
// and health endpoints clients call, served from the durable engine.
//
// It reproduces Consul's wire behaviour (docs/wire-consul.md lists it)
// closely enough that github.com/hashicorp/consul/api (KV, Txn, Session,
// Lock, Semaphore) works unmodified: a CAS that does not apply is HTTP 200
// with body false; a missing key is 404 with an empty body and the meta
// headers; X-Consul-Index is never 0; Session is omitted when unlocked and
// an empty Value is null; Consul's 400/413/500 texts are kept.
//
// This package is the HTTP side only: it parses the query and body,
// authenticates, calls server/internal/consulmodel (the Consul model: KV
// entries, sessions, lock-delays, txn verbs, the catalog) and encodes the
// answer; a refusal of the model (consulmodel.Error) becomes Consul's
// status and text in one place (wireError). It never touches bbolt and
// knows no record layout. Every KV operation is checked and written
// inside one engine.Update by the model, so check-and-write is atomic and
// durable (fsynced) before the answer. A /v1/txn runs all its operations
// in one Update at one index, all or nothing. Blocking queries (blocking.go)
// re-run the model's reads in each snapshot and wait on engine.Wait for a
// commit touching the key or prefix read, with Consul's timeouts (default
// 5m, cap 10m, jitter below wait/16).
//
// Sessions are stored in the engine beside the keys they hold; their TTL
// timers (invalidation at TTL×2 after the last renew) and the lock-delay
// table live in the model's memory and restart with the server, as on a
// Consul leader change.
//
// # Identical writes
//
// As in Consul (since 1.7), a set, cas or re-acquire whose result equals
// the stored entry (Value, Flags, Session, LockIndex) answers true, keeps
// ModifyIndex and wakes no watcher. Options.BumpIdenticalWrites (serve
// --consul-bump-identical-writes) gives every successful write a fresh
// ModifyIndex instead, latchkey's former rule. store/consulstore writes a
// fresh Flags nonce on every write, so its versions stay unique either way.
//
// # Limits
//
// Every limit is explicit and answered in Consul's format: values up to
// Options.MaxValueSize (512 KiB; 413 "Request body(N bytes) too large,
// max size: M bytes. See …#kv_max_value_size.", counted on the bytes
// read, not Content-Length); txn bodies up to Options.MaxTxnBody
// (512 KiB, 413 …#txn_max_req_len) with at most Options.MaxTxnOps (128,
// 413 "Transaction contains too many operations (N > 128)"); keys up to
// Options.MaxKeyLen bytes (4096, 400 "Key too long (N bytes > M
// bytes)"); session create bodies up to 64 KiB; at most
// Options.MaxBlockingQueries (8192) blocking queries waiting at once (429
// beyond); blocking waits of 5m by default, 10m at most, plus jitter
// below wait/16.
//
// # Deliberate differences from Consul
//
//   - Keys are taken as Consul up to 1.21.4 took them: any printable path,
//     not cleaned. Consul's HTTP mux redirects a//b and a/../b (301) and
//     1.21.6 rejects traversal-looking keys (CVE-2025-11392); here such
//     keys are stored as written, since keys are opaque database keys and
//     never file paths. A path with an unprintable character is 400 with
//     an empty body, as Consul's cleanhttp filter answers. Consul has no
//     key-length limit (only its 1 MiB header limit); latchkey's is
//     Options.MaxKeyLen.
//   - Access control is one token (Options.ACLToken) for every /v1/ path,
//     status and agent endpoints included; there are no per-key policies,
//     so lists are never filtered and txns never fail an op on ACLs. As
//     in Consul, a request without a token gets 403 "Permission denied"
//     and one with an unknown token 403 "ACL not found".
//   - Node, Service and Check txn operations get a 409 error entry
//     ("latchkey serves KV operations only"); KV is all this server holds.
//   - The catalog is only what session health checks need (catalog.go):
//     nodes, services and checks registered through /v1/catalog/register
//     or the agent, with no check runners (a check's status is what was
//     last registered or set with /v1/agent/check/pass|warn|fail|update),
//     and this server's own node, whose serfHealth always passes. A check
//     turning critical or being deregistered invalidates the sessions
//     naming it, as in Consul. The lock-delay table and TTL timers live in
//     memory; a restart is a Consul leader change (timers restart at
//     TTL×2, lock-delays are forgotten).
//   - A KV value sent without Content-Length is counted as it is read
//     (Consul trusted Content-Length before 1.21.6, CVE-2025-11374); past
//     the limit it gets the 413 text Consul's txn endpoint uses for such
//     bodies, "Request body too large, max size: M bytes. See …". A
//     session create body is read whether or not it has a Content-Length
//     (Consul reads it only when Content-Length > 0).
package consulapi
