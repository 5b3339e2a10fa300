package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The console is wired with the server's token; /-/health stays open and
// /-/metrics needs the token.
func TestConsoleWired(t *testing.T) {
	s, err := New(Config{DataDir: t.TempDir(), ACLToken: "tok", NoSync: true, AccessKey: "AK", SecretKey: "secret-key-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/-/api/overview", "", http.StatusUnauthorized},
		{"/-/api/overview", "tok", http.StatusOK},
		{"/ui/static/app.css", "", http.StatusOK},
		{"/-/health", "", http.StatusOK},
		{"/-/metrics", "", http.StatusUnauthorized},
		{"/-/metrics", "wrong", http.StatusUnauthorized},
		{"/-/metrics", "tok", http.StatusOK},
		{"/-/nothing", "", http.StatusNotFound},
	} {
		req, _ := http.NewRequest("GET", ts.URL+c.path, nil)
		if c.token != "" {
			req.Header.Set("X-Consul-Token", c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s (token %q): %d, want %d", c.path, c.token, resp.StatusCode, c.want)
		}
	}
}
