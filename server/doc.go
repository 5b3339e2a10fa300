// Package server wires latchkey's server: one engine (server/internal/engine) on a
// data directory, the Consul-compatible KV API under /v1/, the
// S3-compatible API on every other path, and the operational endpoints
// under the reserved prefix /-/, on one listener.
//
// # Routing
//
// Requests are routed on the escaped path (r.URL.EscapedPath()), never
// through http.ServeMux, which would clean "//" and ".." that are legal in
// S3 object keys:
//
//	/v1/...        Consul KV, txn, session, agent and status endpoints
//	/-/health      GET: 200 {"status":"ok","index":N} while the engine is open
//	/-/metrics     GET: Prometheus metrics
//	/ui/, /-/api/  the web console and its JSON (server/internal/console)
//	anything else  S3 (path-style: /bucket/key)
//
// "/-/" cannot collide with S3 (bucket names start with a letter or digit)
// nor with Consul (its API lives under /v1/). /-/health carries no data
// and is open; /-/metrics needs the ACL token when there is one; the
// console (/ui/, /-/api/) needs the credentials of the data it shows.
//
// While any API answers without credentials (no ACL token, or anonymous
// S3), requests whose Host is not an IP address, localhost or an allowed
// name get 403, against DNS rebinding (hosts.go).
//
// # Limits
//
// Header read timeout 10s, idle keep-alive timeout 120s, 64 KiB of request
// headers. There is no overall read or write timeout: S3 bodies may be GiBs
// and Consul blocking queries last up to 10 minutes; each API bounds its own
// bodies (Consul values 512 KiB, S3 single PUT 5 GiB).
//
// # Shutdown
//
// On SIGINT/SIGTERM (the end of Serve's context) the listener closes,
// Consul blocking queries answer at once with the current state, and every
// other request in flight may finish for up to 15s (ShutdownTimeout); what
// is still running then is cancelled and its connection closed. A write is
// thus either acknowledged after its commit or fails before it.
//
// # Tests
//
// Package servertest starts a server in-process on 127.0.0.1:0 with a
// temporary data directory, for tests of clients against the real server.
package server
