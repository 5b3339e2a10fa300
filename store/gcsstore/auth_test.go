package gcsstore

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
)

// With no Endpoint and no STORAGE_EMULATOR_HOST, requests carry a token
// from application default credentials (here a service-account key file
// whose token_uri is a local server), and the token source outlives the
// context Open was given: a Get after that context ended still gets a
// token.
func TestApplicationDefaultCredentials(t *testing.T) {
	var grants, authorized atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || r.FormValue("assertion") == "" {
			http.Error(w, "want a JWT bearer grant", http.StatusBadRequest)
			return
		}
		grants.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"test-token","token_type":"Bearer","expires_in":3600}`))
	})
	mux.HandleFunc("GET /storage/v1/b/bkt/o/p%2Fk", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer test-token" {
			http.Error(w, `{"error":{"code":401,"message":"no token"}}`, http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		w.Header().Set("X-Goog-Generation", "7")
		w.Write([]byte("v"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	creds, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "latchkey-test@p.iam.gserviceaccount.com", "client_id": "1",
		"token_uri": srv.URL + "/token",
	})
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(file, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	t.Setenv(emulatorEnv, "")
	saved := googleEndpoint
	googleEndpoint = srv.URL + "/storage/v1/"
	t.Cleanup(func() { googleEndpoint = saved })

	ctx, cancel := context.WithCancel(context.Background())
	s, err := Open(ctx, &Options{Bucket: "bkt", Prefix: "p"})
	testutil.Opened(t, s, err)
	cancel()
	e, err := s.Get(context.Background(), "k")
	if err != nil || string(e.Value) != "v" || e.Version != "7" {
		t.Fatalf("Get = %+v, %v; want v at 7", e, err)
	}
	if grants.Load() != 1 || authorized.Load() != 1 {
		t.Fatalf("%d token grants, %d authorized reads; want 1 and 1", grants.Load(), authorized.Load())
	}

	// An endpoint turns authentication off, as before.
	plain, err := Open(context.Background(), &Options{Bucket: "bkt", Prefix: "p", Endpoint: srv.URL + "/storage/v1/"})
	testutil.Opened(t, plain, err)
	if _, err := plain.Get(context.Background(), "k"); !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Get without credentials = %v, want a 401 (ErrUnsupported)", err)
	}
}

// Without any credentials Open fails, naming the package.
func TestOpenWithoutCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	t.Setenv(emulatorEnv, "")
	if s, err := Open(context.Background(), &Options{Bucket: "b"}); err == nil {
		s.Close()
		t.Fatal("Open found credentials in a missing file")
	} else if !strings.HasPrefix(err.Error(), "gcsstore: open: ") {
		t.Fatalf("error %q does not name the package", err)
	}
}
