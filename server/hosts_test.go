package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A server that answers without credentials answers only Host names a
// DNS-rebinding page cannot take: loopback and other IP literals,
// localhost and its subdomains, --allowed-hosts and their subdomains.
func TestForeignHostRefusedWithoutCredentials(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     Config
		host    string
		refused bool
	}{
		{"no token", Config{}, "evil.example", true},
		{"no token", Config{}, "evil.example:8500", true},
		{"no token", Config{}, "127.0.0.1.evil.example", true},
		{"no token", Config{}, "localhost.evil.example", true},
		{"no token", Config{}, "localhost:8500", false},
		{"no token", Config{}, "LocalHost.", false},
		{"no token", Config{}, "bucket.localhost:8500", false},
		{"no token", Config{}, "127.0.0.1:8500", false},
		{"no token", Config{}, "[::1]:8500", false},
		{"no token", Config{}, "10.1.2.3:8500", false},
		{"allowed", Config{AllowedHosts: []string{"s3.example.com"}}, "s3.example.com:8500", false},
		{"allowed", Config{AllowedHosts: []string{"s3.example.com"}}, "bkt.s3.example.com", false},
		{"allowed", Config{AllowedHosts: []string{"s3.example.com"}}, "evils3.example.com", true},
		{"allowed", Config{AllowedHosts: []string{"s3.example.com"}}, "example.com", true},
		{"s3 domain", Config{S3Domain: "s3.internal"}, "photos.s3.internal", false},
		{"token", Config{ACLToken: "tok"}, "evil.example", false},
		{"token, anonymous S3", Config{ACLToken: "tok", Anonymous: true}, "evil.example", true},
	} {
		c.cfg.DataDir, c.cfg.NoSync, c.cfg.AccessKey, c.cfg.SecretKey = t.TempDir(), true, "AK", "secret-key-0123456789"
		s, err := New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/v1/kv/k", "/ui/", "/-/api/kv", "/-/health", "/bucket/key"} {
			req := httptest.NewRequest("GET", path, nil)
			req.Host = c.host
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, req)
			refused := w.Code == http.StatusForbidden && strings.Contains(w.Body.String(), "--allowed-hosts")
			if refused != c.refused {
				t.Errorf("%s: GET %s with Host %q: %d %q, want refused=%v", c.name, path, c.host, w.Code, w.Body.String(), c.refused)
			}
			// Each API refuses in its own format: S3's XML error, Consul's plain text.
			if s3 := path == "/bucket/key"; refused && s3 != strings.Contains(w.Body.String(), "<Code>AccessDenied</Code>") {
				t.Errorf("%s: GET %s with Host %q: refusal %q not in the format of its API", c.name, path, c.host, w.Body.String())
			}
		}
		s.Close()
	}
}
