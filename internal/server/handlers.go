package server

import (
	"fmt"
	"io"
	"net/http"

	"github.com/latchkey/latchkey/internal/engine"
)

// This file is where the API packages plug in. Until internal/consulapi and
// internal/s3api are wired here, /v1/ and S3 paths answer 501 in their
// service's own format.

// apis are the two API handlers and what to close at shutdown.
type apis struct {
	consul  http.Handler
	s3      http.Handler
	closers []io.Closer
}

// liveBlobs tells the engine which blobs are referenced, for the orphan
// sweep at Open. PLUG-IN POINT (S3): set to s3api.LiveBlobs.
var liveBlobs func(tx *engine.Tx, live func(id string)) error

// newAPIs builds the handlers over e from cfg.
func newAPIs(e *engine.Engine, cfg Config) (*apis, error) {
	a := &apis{}

	// PLUG-IN POINT (Consul): replace with
	//   h, err := consulapi.New(e, &consulapi.Options{NodeName: cfg.NodeName, ACLToken: cfg.ACLToken, Logger: cfg.Logger})
	//   a.consul = h; a.closers = append(a.closers, h)
	a.consul = notImplementedConsul()

	// PLUG-IN POINT (S3): replace with
	//   h, err := s3api.New(e, &s3api.Options{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey,
	//       Anonymous: cfg.Anonymous, DataDir: cfg.DataDir, Logger: cfg.Logger})
	//   a.s3 = h; a.closers = append(a.closers, h) // if it has Close
	a.s3 = notImplementedS3()

	return a, nil
}

func notImplementedConsul() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotImplemented)
		fmt.Fprintf(w, "Consul KV API not implemented yet: %s %s\n", r.Method, r.URL.EscapedPath())
	})
}

func notImplementedS3() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotImplemented)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
			`<Error><Code>NotImplemented</Code><Message>The S3 API is not implemented yet.</Message><Resource>%s</Resource><RequestId></RequestId></Error>`,
			xmlEscape(r.URL.EscapedPath()))
	})
}
