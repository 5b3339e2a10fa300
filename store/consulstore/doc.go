// Package consulstore is the store contract over Consul KV, through the
// official client github.com/hashicorp/consul/api. It works against a real
// Consul agent and against latchkey's own server (latchkey serve), whose
// /v1/ API is Consul-compatible.
//
// Mapping:
//
//   - A Version is the key's ModifyIndex in decimal.
//   - Put goes through /v1/txn (set, or cas with index 0 for IfAbsent, or
//     cas with the version for IfMatch), because a plain PUT /v1/kv answers
//     only true/false and never reveals the new ModifyIndex; the txn result
//     carries it, so every successful Put returns its version. A txn that
//     does not apply (409) is ErrConflict.
//   - Delete with IfMatch is a /v1/txn of check-index + delete: Consul's own
//     DELETE ?cas answers true for a missing key, which the contract calls a
//     conflict.
//   - List reads ?recurse under the prefix and pages on the client (Consul
//     has no server-side paging): each page costs one read of the whole
//     prefix.
//   - Txn (Capabilities.Transactions) is one /v1/txn; WaitChange
//     (Capabilities.Watch) is a loop of blocking queries on the key.
//
// Every key lives under the store's prefix, so several stores can share one
// Consul. Values are limited to Options.MaxValueSize (default 380 KiB,
// refused before sending with ErrUnsupported): a Put travels base64-encoded
// in a txn body, and Consul's txn_max_req_len is 512 KiB. A Txn's whole
// body must fit the same 512 KiB; Consul refuses a larger one with 413,
// reported as ErrUnsupported. Keys follow store.ValidateKey.
//
// Failures map onto the store error set in one function (see kindOf): a
// request that never left (dial error) or a rate limit (429) is
// ErrTransient; on a read, so is any 5xx or lost connection; on a write,
// a timeout, a lost connection or a 5xx is ErrUnknownOutcome; a 403 is
// ErrUnsupported wrapping ErrPermissionDenied (also when Consul reports an
// ACL denial inside a txn's 409); other 4xx are ErrUnsupported. The HTTP
// status stays in *store.OpError. A context that ends mid-request gives
// an error matching the context's error and, for a write,
// ErrUnknownOutcome. A Put whose outcome is unknown is
// resolved by one consistent re-read when it can be: finding its value
// with its Flags nonce (below) proves it applied, and Put then succeeds
// with that version; anything else leaves ErrUnknownOutcome, since the
// write may still be in flight. A Txn with a put is resolved the same way
// through its first put (a txn applies whole, at one index); deletes
// cannot be resolved (a missing key proves nothing). The official client does not retry, and
// Go's transport resends only GETs, never a PUT.
//
// Connections, deadlines, addresses. Consul lets one client IP hold
// limits.http_max_conns_per_client connections (200 by default, idle ones
// included) and answers the next 429. All Stores of one address in a
// process therefore share one transport holding at most Options.MaxConns
// sockets (default 64), every WaitChange on one key shares one blocking
// query loop, and blocking queries use at most a quarter of the budget.
// A 429 is back-pressure: retried with backoff for up to
// Options.BackPressureWait before it is ErrTransient. Every request has
// Options.RequestTimeout (default 10s) from when it has its connection (a
// blocking query its wait on top): a write without an answer in time is
// ErrUnknownOutcome, settled like any other, and a read goes on to the
// next address (ErrTransient when none is left).
// Options.Addresses names more agents or servers of the same cluster;
// requests move on to the next when the one in use fails. A read (not a
// blocking query) with no answer after Options.HedgeDelay (default 1s) is
// sent again to the next address, which becomes the one in use, while the
// first stays in flight, and again every HedgeDelay up to twice per
// address; the first answer wins. Consul holds a request it cannot
// answer yet (a server cut off from its leader, a follower forwarding to
// a leader that stopped) until it can, so without this a read sent
// before an election waits for the old leader or its RequestTimeout,
// while one sent after the election is answered at once. Writes are
// never sent twice: one held so stays in flight until RequestTimeout.
//
// Consul skips a write identical to the stored entry and keeps its
// ModifyIndex, which would let a rewrite of the same value return an old
// version. Every write therefore carries a random Flags value (a nonce),
// so no Put is ever identical to what it replaces; Flags mean nothing
// else to this store, and a key written here has arbitrary Flags.
package consulstore
