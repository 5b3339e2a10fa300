// Package consulapi is the http.Handler of latchkey's Consul-compatible
// API: /v1/kv, /v1/txn, /v1/session/* and the few agent, status, catalog
// and health endpoints clients call, served from the durable engine.
//
// It reproduces the wire behaviour described in ../shared/spec/consul-kv.md
// closely enough that github.com/hashicorp/consul/api (KV, Txn, Session,
// Lock, Semaphore) works unmodified: a CAS that does not apply is HTTP 200
// with body false; a missing key is 404 with an empty body and the meta
// headers; X-Consul-Index is never 0; Session is omitted when unlocked and
// an empty Value is null; Consul's 400/413/500 texts are kept.
//
// Every KV operation is checked and written inside one engine.Update, so
// check-and-write is atomic and durable (fsynced) before the answer.
// A /v1/txn runs all its operations in one Update at one index, all or
// nothing. Blocking queries wait on engine.Wait for a commit touching the
// key or prefix read, with Consul's timeouts (default 5m, cap 10m, jitter
// below wait/16).
//
// Sessions are stored in the engine beside the keys they hold; their TTL
// timers (invalidation at TTL×2 after the last renew) and the lock-delay
// table live in memory and restart with the server, as on a Consul leader
// change.
//
// Deliberate differences from Consul, each documented where it is made:
// an identical write is not skipped (every write gets a fresh index); keys
// longer than Options.MaxKeyLen get 400; with Options.ACLToken set a
// request without that token gets 403 "Permission denied" (there are no
// per-key policies); Node, Service and Check txn ops get a 409 error entry;
// keys are taken as Consul up to 1.21.4 took them (any printable path; the
// traversal checks of 1.21.6 are not applied).
package consulapi
