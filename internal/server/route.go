package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/internal/engine"
	"github.com/latchkey/latchkey/internal/s3api"
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
	// stopping ends when shutdown begins: it ends Consul blocking queries
	// (which then answer with the current state, as on their own timeout)
	// while every other request in flight runs to completion.
	stopping context.Context
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	if _, ok := s3api.BucketFromHost(r.Host, rt.s3Domain); ok {
		rt.s3.ServeHTTP(w, r)
		return
	}
	switch {
	case p == "/v1" || strings.HasPrefix(p, "/v1/"):
		if isBlockingQuery(r) {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			stop := context.AfterFunc(rt.stopping, cancel)
			defer stop()
			r = r.WithContext(ctx)
		}
		rt.consul.ServeHTTP(w, r)
	case strings.HasPrefix(p, "/-/"), isConsolePath(p): // "ui" is too short for a bucket name
		rt.ops.ServeHTTP(w, r)
	default:
		rt.s3.ServeHTTP(w, r)
	}
}

// isBlockingQuery reports a Consul read that may wait for a change: a GET
// with a non-zero ?index=.
func isBlockingQuery(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	idx := r.URL.Query().Get("index")
	return idx != "" && idx != "0"
}

// opsHandler serves /-/health and /-/metrics.
func (s *Server) opsHandler() http.Handler {
	metrics := s.metrics.handler()
	ui := s.consoleHandler()
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
