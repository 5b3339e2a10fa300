package server

import (
	"io"
	"net/http"
	"time"

	"github.com/latchkey/latchkey/server/internal/consulapi"
	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api"
	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// This file is where the API packages plug in: server/internal/consulapi under
// /v1/, server/internal/s3api on every other path.

// apis are the two API handlers and what to close at shutdown.
type apis struct {
	consul      http.Handler
	consulStats func() consulapi.Stats
	// stopBlocking is consulapi.Handler.StopBlocking: shutdown has begun.
	stopBlocking func()
	// sessionExpiry is consulapi.Handler.SessionExpiry, for the console.
	sessionExpiry func(id string) (time.Time, bool)
	s3            http.Handler
	closers       []io.Closer
	// s3Key is the S3 access key id; s3CredPath the file holding the pair
	// ("" when the keys were given).
	s3Key, s3CredPath string
	// s3Secrets finds the secret of an access key; nil when the S3 API
	// serves unsigned requests (--anonymous), so S3 data is open.
	s3Secrets sigv4.SecretLookup
	// s3Object is s3api.Handler.ConsoleObject, for the console.
	s3Object func(bucket, key string, limit int64) ([]byte, uint64, bool, error)
}

func (a *apis) close() {
	for _, c := range a.closers {
		c.Close()
	}
}

// newAPIs builds the handlers over e from cfg.
func newAPIs(e *engine.Engine, cfg Config) (_ *apis, err error) {
	a := &apis{}
	defer func() {
		if err != nil {
			a.close() // e.g. stop the Consul session timers if S3 setup failed
		}
	}()

	consul, err := consulapi.New(e, &consulapi.Options{NodeName: cfg.NodeName, ACLToken: cfg.ACLToken, Logger: cfg.Logger,
		BumpIdenticalWrites: cfg.ConsulBumpIdenticalWrites, MaxSessions: cfg.ConsulMaxSessions})
	if err != nil {
		return nil, err
	}
	a.consul, a.consulStats, a.sessionExpiry, a.stopBlocking = consul, consul.Stats, consul.SessionExpiry, consul.StopBlocking
	a.closers = append(a.closers, consul)

	// S3: credentials given, or generated once into the data directory.
	ak, sk, credPath, generated, err := s3api.LoadOrCreateCredentials(cfg.DataDir, cfg.AccessKey, cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	a.s3Key, a.s3CredPath = ak, credPath
	if !cfg.Anonymous {
		a.s3Secrets = sigv4.Credentials{ak: sk}.Lookup
	}
	if credPath != "" {
		cfg.Logger.Info("s3: credentials", "file", credPath, "access_key_id", ak, "generated", generated)
	}
	sseKey, err := loadSSEKey(cfg)
	if err != nil {
		return nil, err
	}
	s3h, err := s3api.New(e, &s3api.Options{
		Auth:      sigv4.New(sigv4.Credentials{ak: sk}.Lookup, nil),
		Anonymous: cfg.Anonymous,
		Domain:    cfg.S3Domain,
		Logger:    cfg.Logger,
		SSE:       sseKey,
	})
	if err != nil {
		return nil, err
	}
	a.s3, a.s3Object = s3h, s3h.ConsoleObject
	return a, nil
}
