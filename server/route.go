package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api"
)

// Reserved paths of the operational endpoints.
const (
	HealthPath  = "/-/health"
	MetricsPath = "/-/metrics"
)

// router dispatches on the escaped path; see the package doc.
type router struct {
	consul, s3, ops http.Handler
	// s3Domain is Config.S3Domain: hosts under it are S3 only.
	s3Domain string
	// hosts refuses foreign Host names while anything is served without
	// credentials (hosts.go).
	hosts hostGuard
}

// ServeHTTP reads only the escaped path and the Host. It parses no query:
// each API handler parses it once (and consulapi ends its own blocking
// queries at shutdown: Handler.StopBlocking).
func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, s3 := rt.handler(r)
	if !rt.hosts.allows(r.Host) {
		msg := rt.hosts.refusal(r.Host)
		if s3 {
			s3api.WriteAccessDenied(w, r, msg)
			return
		}
		http.Error(w, msg, http.StatusForbidden) // Consul's errors are plain text
		return
	}
	h.ServeHTTP(w, r)
}

// handler is the API that serves r, and whether it is S3's.
func (rt *router) handler(r *http.Request) (h http.Handler, s3 bool) {
	p := r.URL.EscapedPath()
	if _, ok := s3api.BucketFromHost(r.Host, rt.s3Domain); ok {
		return rt.s3, true
	}
	switch {
	case p == "/v1" || strings.HasPrefix(p, "/v1/"):
		return rt.consul, false
	case strings.HasPrefix(p, "/-/"), isConsolePath(p): // "ui" is too short for a bucket name
		return rt.ops, false
	}
	return rt.s3, true
}

// opsHandler serves /-/health (open: it says only whether the engine is
// up, and its index), /-/metrics (with an ACL token, only to those who
// have it: on the request or in a console session) and the console.
func (s *Server) opsHandler() http.Handler {
	metrics := s.metrics.handler()
	ui, access := s.consoleHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isConsolePath(r.URL.EscapedPath()) {
			ui.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.EscapedPath() {
		case HealthPath:
			s.health(w)
		case MetricsPath:
			if s.cfg.ACLToken != "" && !access(r).Consul {
				w.Header().Set("WWW-Authenticate", `Bearer realm="latchkey"`)
				http.Error(w, "metrics need the ACL token: send it as Authorization: Bearer or X-Consul-Token", http.StatusUnauthorized)
				return
			}
			metrics.ServeHTTP(w, r)
		default:
			http.Error(w, "not found: the /-/ prefix holds only "+HealthPath+" and "+MetricsPath, http.StatusNotFound)
		}
	})
}

func (s *Server) health(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	err := s.engine.View(func(tx *engine.Tx) error { return nil })
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]any{"status": "unavailable", "error": err.Error()})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"status": "ok", "index": s.engine.Index()})
}
