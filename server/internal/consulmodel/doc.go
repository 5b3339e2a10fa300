// Package consulmodel is the Consul model of latchkey's server: KV
// entries, sessions (their TTL timers and lock-delays), the /v1/txn verbs
// and the catalog that session health checks need, over the durable
// engine (server/internal/engine). The HTTP layer,
// server/internal/consulapi, is a thin adapter over it: it parses and
// authenticates a request, calls the model, and encodes the answer or the
// refusal as Consul does. It mirrors server/internal/s3model for S3.
//
// Writes are Model methods, each one engine Update, so a check and its
// write are atomic and durable before they return: Write (one KV verb),
// Txn (all of a /v1/txn at one index, all or nothing, its writes
// buffered in an overlay until every op applied), CreateSession,
// DestroySession, Register, Deregister, PutCheck, SetCheck. Reads are
// functions over an engine transaction (Get, List, Keys, KeysIndex,
// LoadSession, ListSessions, SessionsIndex, CatalogIndex), so that the
// HTTP layer's blocking queries re-run them in each snapshot they wait on.
//
// Refusals are returned, never panicked: an *Error whose Code says what
// Consul answers (Failed: a condition that did not hold, 200 false or a
// txn's 409 entry; Invalid 400; Rejected 500 with Consul's text; NotFound
// 404; TooMany 429). Any other error is the engine's, and nothing was
// written. A record that cannot be decoded is an error wrapping
// engine.ErrCorrupt.
//
// Consul's rules kept here: identical writes (a set, cas or re-acquire
// equal to the stored entry keeps ModifyIndex unless
// Options.BumpIdenticalWrites), LockIndex and Session on acquire and
// release, cas and delete-cas on the one Stale condition, lock-delays
// (checked before an acquire applies, set when a session is invalidated,
// capped at 60s), TTL invalidation at TTL×2 after the last renew (retried
// after ExpiryRetry when its commit fails), session create rules (node
// registered, every check present and not critical, at most
// Options.MaxSessions), and invalidation of the sessions that name a check
// turning critical or deregistered. Timers and lock-delays live in memory
// and restart with the server, as on a Consul leader change.
//
// A cas or delete-cas on a contended key whose index is already stale on
// the latest durable snapshot is refused without entering the engine's
// writer (Model.refusedNow); the answer is the same, and linearizable.
//
// # Layout on disk
//
// A KV entry is one engine record (the engine's "kv" table): the record's
// Flags are Consul's Flags, the engine stamps CreateIndex and ModifyIndex,
// and Data is
//
//	LockIndex (8 bytes, big endian), uvarint len(Session), Session, Value
//
// so the bytes on disk are flags, create, modify, lock, session, value, as
// they have been since the first release. Codec gives the store contract
// (Store) the same entries: a plain Put keeps the Session and resets
// LockIndex and Flags, as Consul's set does.
//
// Sessions and the catalog live in raw engine buckets, values JSON:
//
//	consul/sessions   id                  → Session
//	consul/held       id "\x00" key       → "" (the keys a session holds)
//	consul/catalog    "n" node            → Node
//	                  "s" node "\x00" id  → Service
//	                  "c" node "\x00" id  → HealthCheck
//	consul/meta       "sessions-index", "catalog-index" → the last index that changed each (8 BE)
//
// Session changes touch the engine watch name SessionWatchPrefix+id,
// catalog changes "\x00consul/catalog".
package consulmodel
