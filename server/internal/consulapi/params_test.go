package consulapi

import (
	"strconv"
	"strings"
	"testing"
)

// Query parameters as Consul parses them: present whatever
// the value, empty wait/index/max_stale ignored, wait checked before
// index.
func TestParamsParsing(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect(t, "PUT", "/v1/kv/p/a", "1", 200, "true")
	s.expect(t, "PUT", "/v1/kv/p/b", "2", 200, "true")
	for _, c := range []struct {
		path   string
		status int
		body   string // prefix
	}{
		// Empty values are skipped: a plain, non-blocking read.
		{"/v1/kv/p/a?raw&wait=&index=", 200, "1"},
		{"/v1/kv/p/a?raw&max_stale=", 200, "1"},
		{"/v1/kv/p/a?raw&index=0&wait=10m", 200, "1"}, // index 0 never blocks
		// Wait is parsed before index.
		{"/v1/kv/p/a?wait=x&index=y", 400, "Invalid wait time"},
		{"/v1/kv/p/a?wait=1s&index=-1", 400, "Invalid index"},
		{"/v1/kv/p/a?max_stale=soon", 400, `Invalid max_stale value "soon"`},
		// A parameter counts whatever its value.
		{"/v1/kv/p/?recurse=false", 200, `[{"LockIndex":0,"Key":"p/a"`},
		{"/v1/kv/p/?keys=no", 200, `["p/a","p/b"]`},
		{"/v1/kv/p/a?raw=0", 200, "1"},
		{"/v1/kv/p/a?stale=false&consistent=false", 400, "Cannot specify ?stale with ?consistent"},
		{"/v1/kv/p/a?raw&dc=dc1", 200, "1"},
		{"/v1/kv/p/a?cached&raw", 200, "1"},
	} {
		resp, body := s.do(t, "GET", c.path, "")
		if resp.StatusCode != c.status || !strings.HasPrefix(body, c.body) {
			t.Errorf("GET %s: %d %q, want %d %q…", c.path, resp.StatusCode, body, c.status, c.body)
		}
	}
	// The query is parsed before anything else, on writes too.
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/v1/kv/?index=x", "Invalid index"},
		{"PUT", "/v1/kv/p/a?index=x", "Invalid index"},
		{"PUT", "/v1/kv/?wait=x", "Invalid wait time"},
		{"DELETE", "/v1/kv/p/a?stale&consistent", "Cannot specify ?stale with ?consistent, conflicting semantics."},
		{"DELETE", "/v1/kv/p/a?max_stale=x&cas=1&recurse", `Invalid max_stale value "x"`},
	} {
		s.expect(t, c.method, c.path, "", 400, c.want)
	}
	// DELETE ?recurse=false deletes the prefix too.
	s.expect(t, "DELETE", "/v1/kv/p/?recurse=false", "", 200, "true")
	s.expect(t, "GET", "/v1/kv/p/?keys", "", 404, "")
}

// Writes answer true/false without X-Consul-Index (a write never reveals
// its ModifyIndex, hashicorp/consul#14258); reads, 404 included, carry it.
func TestWritesCarryNoIndex(t *testing.T) {
	s := newTestServer(t, nil)
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/v1/kv/w", "v"},
		{"PUT", "/v1/kv/w?cas=0", "v"},
		{"PUT", "/v1/kv/w?flags=3", "v"},
		{"DELETE", "/v1/kv/w?cas=1", ""},
		{"DELETE", "/v1/kv/w", ""},
		{"DELETE", "/v1/kv/?recurse", ""},
	} {
		resp, _ := s.do(t, c.method, c.path, c.body)
		if resp.StatusCode != 200 || resp.Header.Get("X-Consul-Index") != "" {
			t.Errorf("%s %s: %d with X-Consul-Index %q, want 200 without", c.method, c.path, resp.StatusCode, resp.Header.Get("X-Consul-Index"))
		}
		if got := resp.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, got)
		}
	}
	resp, _ := s.do(t, "GET", "/v1/kv/w", "")
	if n, err := strconv.ParseUint(resp.Header.Get("X-Consul-Index"), 10, 64); resp.StatusCode != 404 || err != nil || n < 1 {
		t.Errorf("GET after delete: %d, X-Consul-Index %q", resp.StatusCode, resp.Header.Get("X-Consul-Index"))
	}
}

// DELETE /v1/kv/?recurse deletes every key, and ?recurse at the root
// then finds nothing: 404 even there.
func TestDeleteRecurseRoot(t *testing.T) {
	s := newTestServer(t, nil)
	for _, k := range []string{"a", "b/c", "d/e/f"} {
		s.expect(t, "PUT", "/v1/kv/"+k, "x", 200, "true")
	}
	s.expect(t, "GET", "/v1/kv/?keys", "", 200, `["a","b/c","d/e/f"]`)
	s.expect(t, "DELETE", "/v1/kv/?recurse", "", 200, "true")
	s.expect(t, "GET", "/v1/kv/?recurse", "", 404, "")
	s.expect(t, "GET", "/v1/kv/?keys", "", 200, "[]")
}

// Keys are stored as written, not cleaned (package doc: Consul's mux
// would redirect these); a long key is refused with its length.
func TestKeysNotCleaned(t *testing.T) {
	s := newTestServer(t, nil)
	for _, k := range []string{"a//b", "a/../b", "a/./b", "sp ace", "ünï"} {
		s.expect(t, "PUT", "/v1/kv/"+k, k, 200, "true")
		s.expect(t, "GET", "/v1/kv/"+k+"?raw", "", 200, k)
	}
	s.expect(t, "GET", "/v1/kv/?keys", "", 200, `["a/../b","a/./b","a//b","sp ace","ünï"]`)
	s.expect(t, "PUT", "/v1/kv/"+strings.Repeat("k", 4096), "", 200, "true")
	s.expect(t, "PUT", "/v1/kv/"+strings.Repeat("k", 4097), "", 400, "Key too long (4097 bytes > 4096 bytes)")
}
