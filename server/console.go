package server

import (
	"net/http"
	"strings"

	"github.com/latchkey/latchkey/server/internal/console"
)

// consoleHandler is the web console (server/internal/console) under /ui/ with its
// JSON under /-/api/, behind the same credentials as the APIs whose data
// it shows: the ACL token for Consul data, the S3 keys for S3 data.
func (s *Server) consoleHandler() (http.Handler, func(*http.Request) console.Access) {
	h, err := console.New(&console.Options{
		Engine:        s.engine,
		ACLToken:      s.cfg.ACLToken,
		S3Credentials: s.apis.s3Secrets,
		Metrics:       s.metrics.reg,
		ConsulStats:   s.apis.consulStats,
		SessionExpiry: s.apis.sessionExpiry,
		S3Object:      s.apis.s3Object,
		Logger:        s.log,
	})
	if err != nil { // embedded templates that do not parse: a build defect
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}), func(*http.Request) console.Access { return console.Access{} }
	}
	return h, h.Access
}

// isConsolePath reports a path the console serves.
func isConsolePath(p string) bool {
	return p == "/ui" || strings.HasPrefix(p, console.UIPrefix) || strings.HasPrefix(p, console.APIPrefix)
}
