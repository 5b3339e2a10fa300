package consulapi

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/latchkey/latchkey/server/internal/consulmodel"
)

// The agent, status, catalog and health endpoints that clients call
// around KV: the official client's Lock/Semaphore need none, `consul lock`
// needs /v1/agent/self, and the upstream api test harness probes
// /v1/status/leader, /v1/catalog/nodes and /v1/health/node/<n>. This
// server is one node that is its own leader, in one datacenter.

// Version is the Consul version latchkey reports.
const consulVersion = "1.21.6"

func (h *Handler) serveAgent(w http.ResponseWriter, r *http.Request, q url.Values, path string) error {
	if r.Method == http.MethodPut {
		if ok, err := h.serveCatalogWrite(w, r, q, path); ok {
			return err
		}
	}
	if r.Method != http.MethodGet {
		return methodNotAllowed(r.Method, "OPTIONS,GET")
	}
	addr := h.serverAddr(r)
	switch {
	case path == "/v1/agent/self":
		writeJSON(w, q, 0, map[string]any{
			"Config": map[string]any{
				"Datacenter": h.opts.Datacenter,
				"NodeName":   h.opts.NodeName,
				"NodeID":     consulmodel.NodeID(h.opts.NodeName),
				"Server":     true,
				"Revision":   "latchkey",
				"Version":    consulVersion,
			},
			"Member": h.member(addr),
			"Meta":   map[string]string{},
			"Stats":  map[string]any{},
		})
	case path == "/v1/agent/members":
		writeJSON(w, q, 0, []any{h.member(addr)})
	case path == "/v1/status/leader":
		writeJSON(w, q, 0, addr+":8300")
	case path == "/v1/status/peers":
		writeJSON(w, q, 0, []string{addr + ":8300"})
	case path == "/v1/catalog/datacenters":
		writeJSON(w, q, 0, []string{h.opts.Datacenter})
	case path == "/v1/catalog/nodes":
		nodes, idx, err := h.m.Nodes(addr)
		if err != nil {
			return err
		}
		setQueryMeta(w, idx, "leader")
		writeJSON(w, q, 0, nodes)
	case strings.HasPrefix(path, "/v1/health/node/"):
		node := strings.TrimPrefix(path, "/v1/health/node/")
		checks, idx, err := h.m.NodeChecks(node)
		if err != nil {
			return err
		}
		if checks == nil {
			checks = []*consulmodel.HealthCheck{}
		}
		setQueryMeta(w, idx, "leader")
		writeJSON(w, q, 0, checks)
	default:
		return errorf(http.StatusNotFound, "404 page not found")
	}
	return nil
}

func (h *Handler) member(addr string) map[string]any {
	return map[string]any{
		"Name": h.opts.NodeName, "Addr": addr, "Port": 8301, "Status": 1,
		"Tags": map[string]string{"role": "consul", "dc": h.opts.Datacenter, "build": consulVersion + ":latchkey"},
	}
}

// serverAddr is the IP the request arrived on, or 127.0.0.1.
func (h *Handler) serverAddr(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if host, _, err := net.SplitHostPort(a.String()); err == nil {
			return host
		}
	}
	return "127.0.0.1"
}
