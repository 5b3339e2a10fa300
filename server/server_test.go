package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/internal/consulmodel"
	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/servertest"
)

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthAndMetrics(t *testing.T) {
	srv := servertest.Start(t, nil)
	if _, err := srv.Engine().Update(t.Context(), func(tx *engine.Tx) error {
		consulmodel.Put(tx, consulmodel.KV{Key: "k", Value: []byte("v")})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, http.DefaultClient, srv.URL+server.HealthPath)
	if code != 200 {
		t.Fatalf("health: %d %s", code, body)
	}
	var h struct {
		Status string
		Index  uint64
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil || h.Status != "ok" || h.Index != 2 {
		t.Fatalf("health body %q (%v), want status ok index 2", body, err)
	}
	code, body = get(t, http.DefaultClient, srv.URL+server.MetricsPath)
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for _, want := range []string{
		"latchkey_engine_commits_total 1",
		"latchkey_engine_updates_total 1",
		"latchkey_engine_index 2",
		"latchkey_engine_failed 0",
		"latchkey_engine_commit_batch_size_count 1",
		`latchkey_http_requests_total{api="ops",code="200"} 1`,
		"latchkey_consul_blocking_queries 0",
		"latchkey_consul_session_timers 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if code, _ := get(t, http.DefaultClient, srv.URL+"/-/nothing"); code != 404 {
		t.Errorf("/-/nothing: %d, want 404", code)
	}
}

func TestSecondServerOnSameDirIsRefused(t *testing.T) {
	srv := servertest.Start(t, nil)
	_, err := server.New(server.Config{DataDir: srv.DataDir, Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second server: %v, want engine.ErrLocked", err)
	}
	// The command line sees the same error through the server package.
	if !errors.Is(err, server.ErrDataDirInUse) {
		t.Fatalf("second server: %v, want server.ErrDataDirInUse", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	s2, err := server.New(server.Config{DataDir: srv.DataDir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	s2.Close()
}

func TestRunPrintsWhereItListensAndShutsDown(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: dir, Listen: "127.0.0.1:0", NoSync: true,
			Logger: slog.New(slog.DiscardHandler)}, pw)
		pw.Close()
	}()
	line := make([]byte, 512)
	n, err := pr.Read(line)
	if err != nil {
		t.Fatal(err)
	}
	msg := string(line[:n])
	if !strings.HasPrefix(msg, "latchkey: serving Consul KV API and S3 API on http://127.0.0.1:") ||
		!strings.Contains(msg, "(data in "+dir+")") {
		t.Fatalf("startup line %q", msg)
	}
	url := strings.Fields(msg)[9]
	if code, _ := get(t, http.DefaultClient, url+server.HealthPath); code != 200 {
		t.Fatalf("health %d", code)
	}
	cancel()
	go io.Copy(io.Discard, pr)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if _, err := os.Stat(filepath.Join(dir, "latchkey.db")); err != nil {
		t.Fatal(err)
	}
}

func TestListenFailureReleasesDir(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	cfg := server.Config{DataDir: dir, Listen: ln.Addr().String(), NoSync: true, Logger: slog.New(slog.DiscardHandler)}
	if err := server.Run(t.Context(), cfg, io.Discard); err == nil {
		t.Fatal("Run on a taken port succeeded")
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatalf("dir still locked after a failed Run: %v", err)
	}
	s.Close()
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []server.Config{
		{},
		{DataDir: t.TempDir(), TLSCert: "x"},
		{DataDir: t.TempDir(), AccessKey: "x"},
		{DataDir: t.TempDir(), TLSCert: "/nonexistent/cert.pem", TLSKey: "/nonexistent/key.pem"},
	} {
		if _, err := server.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

func TestTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{TLSCert: certFile, TLSKey: keyFile}})
	if !strings.HasPrefix(srv.URL, "https://") {
		t.Fatalf("URL %q, want https", srv.URL)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code, body := get(t, c, srv.URL+server.HealthPath); code != 200 {
		t.Fatalf("health over TLS: %d %s", code, body)
	}
	// plain HTTP to the TLS port gets net/http's 400, never our health
	if resp, err := http.Get("http://" + srv.Addr + server.HealthPath); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP served on the TLS listener")
		}
	}
}

func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// Requests are logged (debug level) by path only: never the query, which
// may carry an ACL token or a presigned signature.
func TestRequestLogOmitsQuery(t *testing.T) {
	var buf testutil.LockedBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{Logger: log}})
	get(t, http.DefaultClient, srv.URL+"/v1/kv/some/key?token=sekrit-token")
	srv.Stop()
	out := buf.String()
	if !strings.Contains(out, "path=/v1/kv/some/key") || !strings.Contains(out, "api=consul") {
		t.Fatalf("request not logged: %s", out)
	}
	if strings.Contains(out, "sekrit") {
		t.Fatalf("log leaks the query: %s", out)
	}
}

// Beyond loopback, the Consul API is never served without a token unless
// that is explicitly enabled: Run refuses, says how to fix it, prints no
// "serving" line and releases the directory; with --acl-token or
// ConsulAnonymous it serves.
func TestNonLoopbackNeedsTokenOrExplicitAnonymous(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	err := server.Run(t.Context(), server.Config{DataDir: dir, Listen: "0.0.0.0:0", NoSync: true,
		Logger: slog.New(slog.DiscardHandler)}, &out)
	if err == nil || !strings.Contains(err.Error(), "--acl-token") || !strings.Contains(err.Error(), "--consul-anonymous") {
		t.Fatalf("Run on 0.0.0.0 without a token: %v, want a refusal naming --acl-token and --consul-anonymous", err)
	}
	if out.Len() != 0 {
		t.Fatalf("refused server printed %q", out.String())
	}
	for _, cfg := range []server.Config{{ACLToken: "secret"}, {ConsulAnonymous: true}} {
		cfg.DataDir, cfg.Listen, cfg.NoSync, cfg.Logger = dir, "0.0.0.0:0", true, slog.New(slog.DiscardHandler)
		ctx, cancel := context.WithCancel(t.Context())
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- server.Run(ctx, cfg, pw); pw.Close() }()
		line := make([]byte, 512)
		n, _ := pr.Read(line)
		if !strings.HasPrefix(string(line[:n]), "latchkey: serving") {
			t.Errorf("token %q anonymous %v: said %q", cfg.ACLToken, cfg.ConsulAnonymous, line[:n])
		}
		cancel()
		go io.Copy(io.Discard, pr)
		if err := <-done; err != nil {
			t.Errorf("token %q anonymous %v: %v", cfg.ACLToken, cfg.ConsulAnonymous, err)
		}
	}
}
