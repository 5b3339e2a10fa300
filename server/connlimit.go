package server

import (
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-connlimit"
)

// DefaultMaxConnsPerClient is the default Config.MaxConnsPerClient:
// Consul's default limits.http_max_conns_per_client.
const DefaultMaxConnsPerClient = 200

// connLimitWriteDelay bounds how long writing the 429 to a connection over
// the limit may take before it is closed anyway (Consul's value).
const connLimitWriteDelay = 10 * time.Millisecond

// connLimit imitates Consul's per-client connection limit
// (limits.http_max_conns_per_client) with the very library Consul uses,
// hashicorp/go-connlimit, wired as Consul's agent wires it: every
// connection, idle keep-alive ones included, counts against its client
// IP from accept to close, and a connection past the limit is answered at
// once, before its request is read, with
//
//	HTTP/1.1 429 Too Many Requests
//	Content-Type: text/plain
//	Connection: close
//
//	Your IP is issuing too many concurrent connections, please rate limit your calls
//
// and closed. The request on it is never served, so a client may retry
// it. max ≤ 0 disables the limit. It returns the http.Server ConnState
// hook.
func connLimit(max int) func(net.Conn, http.ConnState) {
	l := connlimit.NewLimiter(connlimit.Config{MaxConnsPerClientIP: max})
	return l.HTTPConnStateFuncWithDefault429Handler(connLimitWriteDelay)
}
