package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func tag(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, name+" "+r.URL.EscapedPath())
	})
}

// The router picks the API by the escaped path, uncleaned: Consul under
// /v1/, the console and the server's own endpoints under /ui and /-/, S3
// for everything else, look-alikes included.
func TestRoutingOnEscapedPath(t *testing.T) {
	rt := &router{consul: tag("consul"), s3: tag("s3"), ops: tag("ops")}
	ts := httptest.NewServer(rt)
	defer ts.Close()
	for path, want := range map[string]string{
		"/v1/kv/a":            "consul /v1/kv/a",
		"/v1/kv//a/../b":      "consul /v1/kv//a/../b",
		"/v1":                 "consul /v1",
		"/v10/x":              "s3 /v10/x",
		"/bucket/a//b/../c":   "s3 /bucket/a//b/../c",
		"/bucket/a%2Fb":       "s3 /bucket/a%2Fb",
		"/":                   "s3 /",
		"/-/health":           "ops /-/health",
		"/bucket/-/health":    "s3 /bucket/-/health",
		"/bucket/key%20space": "s3 /bucket/key%20space",
		// The console.
		"/ui":             "ops /ui",
		"/ui/":            "ops /ui/",
		"/ui/kv":          "ops /ui/kv",
		"/-/api/overview": "ops /-/api/overview",
		"/uix/key":        "s3 /uix/key",
		"/bucket/ui/x":    "s3 /bucket/ui/x",
		"/bucket/-/api/x": "s3 /bucket/-/api/x",
	} {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		resp, err := http.DefaultTransport.RoundTrip(req) // no redirects, no cleaning
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("GET %s went to %q, want %q", path, b, want)
		}
	}
}
