package server

import (
	"net"
	"net/netip"
	"strings"
)

// hostGuard defends a server that answers without credentials against
// DNS rebinding: a web page the operator visits can point its own name at
// 127.0.0.1 and then send the browser's requests, with that name in Host,
// to the server, as from the same origin. Such a request always names a
// domain the attacker controls, so the server answers only Hosts that
// cannot be one: IP literals (the browser's origin is then the server
// itself), "localhost" and its subdomains (browsers resolve them to
// loopback themselves), and the names of Config.AllowedHosts and
// Config.S3Domain with their subdomains (virtual-hosted-style buckets). A
// request without Host (HTTP/1.0) is not from a browser. When every API
// needs credentials (an ACL token, and S3 not --anonymous) the guard is
// off: a rebinding page has none.
type hostGuard struct {
	on    bool
	names []string // lower case, no trailing dot
}

func newHostGuard(cfg Config) hostGuard {
	g := hostGuard{on: cfg.ACLToken == "" || cfg.Anonymous, names: []string{"localhost"}}
	for _, n := range append(cfg.AllowedHosts, cfg.S3Domain) {
		if n = strings.ToLower(strings.Trim(strings.TrimSpace(n), ".")); n != "" {
			g.names = append(g.names, n)
		}
	}
	return g
}

// allows reports whether a request with this Host header is answered.
func (g hostGuard) allows(host string) bool {
	if !g.on || host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if a, err := netip.ParseAddr(host); err == nil && a.Zone() == "" { // net.ParseIP's answer, without its allocation
		return true
	}
	for _, n := range g.names {
		if host == n || strings.HasSuffix(host, "."+n) {
			return true
		}
	}
	return false
}

// refusal is the message a refused Host gets (in the 403 of the API the
// request was for).
func (g hostGuard) refusal(host string) string {
	return "latchkey: Host " + quote(host) + " refused: this server answers requests without credentials, so it answers only " +
		"IP addresses, localhost and the names given with --allowed-hosts (LATCHKEY_ALLOWED_HOSTS), to keep pages on other sites " +
		"from reaching it by DNS rebinding; add this name there, or give the server an ACL token and S3 credentials"
}

func quote(s string) string {
	if len(s) > 256 {
		s = s[:256]
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
