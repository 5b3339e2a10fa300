package consulapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Raw-HTTP checks of Consul's wire quirks (docs/wire-consul.md).

func TestQuirkMissingKey404EmptyBodyWithMeta(t *testing.T) {
	s := newTestServer(t, nil)
	for _, path := range []string{"/v1/kv/nope", "/v1/kv/nope?recurse", "/v1/kv/nope?keys", "/v1/kv/?recurse"} {
		resp := s.expect(t, "GET", path, "", 404, "")
		idx, err := strconv.ParseUint(resp.Header.Get("X-Consul-Index"), 10, 64)
		if err != nil || idx < 1 {
			t.Errorf("%s: X-Consul-Index %q, want ≥ 1", path, resp.Header.Get("X-Consul-Index"))
		}
		if resp.Header.Get("X-Consul-LastContact") != "0" || resp.Header.Get("X-Consul-KnownLeader") != "true" {
			t.Errorf("%s: meta headers %v", path, resp.Header)
		}
	}
	// Keys at the root with nothing stored: 200 [], never null.
	s.expect(t, "GET", "/v1/kv/?keys", "", 200, "[]")
	s.expect(t, "GET", "/v1/kv/", "", 400, "Missing key name")
}

func TestQuirkEntryJSON(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect(t, "PUT", "/v1/kv/e/empty?flags=42", "", 200, "true")
	_, body := s.do(t, "GET", "/v1/kv/e/empty", "")
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil || len(raw) != 1 {
		t.Fatalf("body %s: %v", body, err)
	}
	if _, ok := raw[0]["Session"]; ok {
		t.Errorf("Session present on an unlocked key: %s", body)
	}
	if string(raw[0]["Value"]) != "null" || string(raw[0]["Flags"]) != "42" {
		t.Errorf("empty value must be null, flags 42: %s", body)
	}
	want := []string{"LockIndex", "Key", "Flags", "Value", "CreateIndex", "ModifyIndex"}
	pos := -1
	for _, f := range want {
		i := strings.Index(body, `"`+f+`"`)
		if i < pos {
			t.Errorf("field %s out of Consul's order in %s", f, body)
		}
		pos = i
	}
	// A plain set resets flags to 0 when ?flags is absent.
	s.expect(t, "PUT", "/v1/kv/e/empty", "v", 200, "true")
	_, body = s.do(t, "GET", "/v1/kv/e/empty", "")
	if !strings.Contains(body, `"Flags":0`) || !strings.Contains(body, `"Value":"dg=="`) {
		t.Errorf("after set: %s", body)
	}
}

func TestQuirkStatusCodes(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect(t, "PUT", "/v1/kv/held", "v", 200, "true")
	big := strings.Repeat("x", 512<<10+1)
	cases := []struct {
		method, path, body string
		status             int
		want               string // body prefix
	}{
		{"PUT", "/v1/kv/k?cas=1&acquire=x", "", 400, "Conflicting flags: acquire=x&cas=1\n"},
		{"PUT", "/v1/kv/k?acquire=a&release=b", "", 400, "Conflicting flags: "},
		{"DELETE", "/v1/kv/k?recurse&cas=1", "", 400, "Conflicting flags: "},
		{"PUT", "/v1/kv/", "v", 400, "Missing key name"},
		{"DELETE", "/v1/kv/", "", 400, "Missing key name"},
		{"GET", "/v1/kv/k?index=x", "", 400, "Invalid index"},
		{"GET", "/v1/kv/k?wait=10", "", 400, "Invalid wait time"},
		{"GET", "/v1/kv/k?stale&consistent", "", 400, "Cannot specify ?stale with ?consistent, conflicting semantics."},
		{"GET", "/v1/kv/k?dc=elsewhere", "", 500, "No path to datacenter"},
		{"PUT", "/v1/kv/k?flags=x", "", 500, `strconv.ParseUint: parsing "x": invalid syntax`},
		{"PUT", "/v1/kv/k?cas=-1", "", 500, `strconv.ParseUint: parsing "-1": invalid syntax`},
		{"PUT", "/v1/kv/k?acquire=", "", 500, "missing session"},
		{"PUT", "/v1/kv/k?release=", "", 500, "missing session"},
		{"PUT", "/v1/kv/k?acquire=no-such-session", "", 500, `invalid session "no-such-session"`},
		{"PUT", "/v1/kv/k?release=no-such-session", "", 200, "false"},
		{"DELETE", "/v1/kv/missing?cas=5", "", 200, "true"},
		{"DELETE", "/v1/kv/held?cas=0", "", 200, "false"},
		{"DELETE", "/v1/kv/missing", "", 200, "true"},
		{"PUT", "/v1/kv/big", big, 413, "Request body(524289 bytes) too large, max size: 524288 bytes."},
		{"GET", "/v1/kv/%01x", "", 400, ""},
		{"GET", "/v1/kv/" + strings.Repeat("k", 4097), "", 400, "Key too long"},
		{"PUT", "/v1/txn", "[", 400, "Failed to parse body: "},
		{"PUT", "/v1/txn", "[" + strings.Repeat(`{"KV":{"Verb":"get","Key":"k"}},`, 128) + `{"KV":{"Verb":"get","Key":"k"}}]`, 413, "Transaction contains too many operations (129 > 128)"},
		{"PUT", "/v1/session/renew/", "", 400, "Missing session"},
		{"PUT", "/v1/session/destroy/", "", 400, "Missing session"},
		{"GET", "/v1/session/info/", "", 400, "Missing session"},
		{"GET", "/v1/session/node/", "", 400, "Missing node name"},
		{"PUT", "/v1/session/renew/0e3c1f5e-0000-4000-8000-000000000000", "", 404, "Session id '0e3c1f5e-0000-4000-8000-000000000000' not found"},
		{"GET", "/v1/session/info/0e3c1f5e-0000-4000-8000-000000000000", "", 200, "[]"},
		{"PUT", "/v1/session/destroy/0e3c1f5e-0000-4000-8000-000000000000", "", 200, "true"},
		{"PUT", "/v1/session/create", `{"TTL":"50ms"}`, 500, "Invalid Session TTL '50000000', must be between [100ms=24h0m0s]"},
		{"PUT", "/v1/session/create", `{"TTL":"soon"}`, 500, "Session TTL 'soon' invalid: "},
		{"PUT", "/v1/session/create", `{"Behavior":"explode"}`, 500, "Invalid Behavior setting 'explode'"},
		{"PUT", "/v1/session/create", `{"LockDelay":"20"}`, 400, "Request decode failed: "},
		{"PUT", "/v1/session/create", `{"Node":"other"}`, 500, "Missing node registration"},
		{"PUT", "/v1/session/create", `{"NodeChecks":["web"]}`, 500, "Missing check 'web' registration"},
		{"PUT", "/v1/session/create", `{`, 400, "Request decode failed: "},
	}
	for _, c := range cases {
		resp, body := s.do(t, c.method, c.path, c.body)
		if resp.StatusCode != c.status || !strings.HasPrefix(body, c.want) {
			t.Errorf("%s %.60s: got %d %q, want %d %q…", c.method, c.path, resp.StatusCode, body, c.status, c.want)
		}
	}
}

func TestQuirkValueLimitCountsRealBytes(t *testing.T) {
	s := newTestServer(t, nil)
	// No Content-Length (chunked): the limit is enforced on the bytes read.
	body := io.MultiReader(strings.NewReader(strings.Repeat("y", 512<<10)), strings.NewReader("z"))
	req, _ := http.NewRequest("PUT", s.URL+"/v1/kv/chunked", body)
	req.ContentLength = -1
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked oversize body: %d, want 413", resp.StatusCode)
	}
	s.expect(t, "GET", "/v1/kv/chunked", "", 404, "")
	// Exactly the limit is fine.
	s.expect(t, "PUT", "/v1/kv/exact", strings.Repeat("y", 512<<10), 200, "true")
}

func TestQuirkMethodNotAllowed(t *testing.T) {
	s := newTestServer(t, nil)
	resp := s.expect(t, "POST", "/v1/kv/k", "v", 405, "method POST not allowed")
	if got := resp.Header.Get("Allow"); got != "OPTIONS,GET,PUT,DELETE" {
		t.Errorf("Allow %q", got)
	}
	resp = s.expect(t, "GET", "/v1/txn", "", 405, "method GET not allowed")
	if got := resp.Header.Get("Allow"); got != "OPTIONS,PUT" {
		t.Errorf("txn Allow %q", got)
	}
	s.expect(t, "GET", "/v1/session/create", "", 405, "method GET not allowed")
}

func TestQuirkKeysSeparatorRollup(t *testing.T) {
	s := newTestServer(t, nil)
	for _, k := range []string{"bar", "baz", "foo/sub1", "foo/sub2", "zip"} {
		s.expect(t, "PUT", "/v1/kv/r/"+k, "x", 200, "true")
	}
	s.expect(t, "GET", "/v1/kv/r/?keys&separator=/", "", 200, `["r/bar","r/baz","r/foo/","r/zip"]`)
	s.expect(t, "GET", "/v1/kv/r/?keys&seperator=/", "", 200, `["r/bar","r/baz","r/foo/","r/zip"]`)
	s.expect(t, "GET", "/v1/kv/r/?keys&seperator=x&separator=/", "", 200, `["r/bar","r/baz","r/foo/","r/zip"]`)
	s.expect(t, "GET", "/v1/kv/r/f?keys", "", 200, `["r/foo/sub1","r/foo/sub2"]`)
	s.expect(t, "GET", "/v1/kv/?keys&separator=/", "", 200, `["r/"]`)
	s.expect(t, "GET", "/v1/kv/r/nothing?keys", "", 404, "")
}

func TestQuirkRaw(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect(t, "PUT", "/v1/kv/raw", "<script>", 200, "true")
	resp := s.expect(t, "GET", "/v1/kv/raw?raw", "", 200, "<script>")
	for h, want := range map[string]string{"Content-Type": "text/plain", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	resp, _ = s.do(t, "GET", "/v1/kv/raw", "")
	if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Content-Security-Policy") != "" {
		t.Errorf("JSON GET headers %v", resp.Header)
	}
	// ?raw is ignored with ?recurse.
	_, body := s.do(t, "GET", "/v1/kv/raw?raw&recurse", "")
	if !strings.HasPrefix(body, `[{"LockIndex":0,"Key":"raw"`) {
		t.Errorf("raw+recurse: %s", body)
	}
}

func TestQuirkLockIndexAndSessionRules(t *testing.T) {
	s := newTestServer(t, nil)
	_, body := s.do(t, "PUT", "/v1/session/create", `{"LockDelay":0}`)
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	sid := created.ID
	entry := func() map[string]any {
		_, b := s.do(t, "GET", "/v1/kv/l", "")
		var es []map[string]any
		if err := json.Unmarshal([]byte(b), &es); err != nil || len(es) != 1 {
			t.Fatalf("get l: %s", b)
		}
		return es[0]
	}
	check := func(step string, lockIndex float64, session any, value any) {
		t.Helper()
		e := entry()
		if e["LockIndex"] != lockIndex || e["Session"] != session || e["Value"] != value {
			t.Fatalf("%s: %v; want LockIndex %v Session %v Value %v", step, e, lockIndex, session, value)
		}
	}
	s.expect(t, "PUT", "/v1/kv/l?acquire="+sid, "a", 200, "true")
	check("acquire new", 1, sid, "YQ==")
	s.expect(t, "PUT", "/v1/kv/l?acquire="+sid, "b", 200, "true")
	check("re-acquire", 1, sid, "Yg==")
	s.expect(t, "PUT", "/v1/kv/l", "c", 200, "true")
	check("plain set keeps Session, resets LockIndex", 0, sid, "Yw==")
	s.expect(t, "PUT", "/v1/kv/l?release="+sid, "", 200, "true")
	check("release", 0, nil, nil)
	s.expect(t, "PUT", "/v1/kv/l?acquire="+sid, "d", 200, "true")
	check("acquire unlocked", 1, sid, "ZA==")
	s.expect(t, "PUT", "/v1/kv/l?release="+sid, "e", 200, "true")
	s.expect(t, "PUT", "/v1/kv/l?acquire="+sid, "f", 200, "true")
	check("acquire again", 2, sid, "Zg==")
	// Destroying the session releases (default behaviour) with a bump.
	before := entry()["ModifyIndex"].(float64)
	s.expect(t, "PUT", "/v1/session/destroy/"+sid, "", 200, "true")
	check("invalidated", 2, nil, "Zg==")
	if after := entry()["ModifyIndex"].(float64); after <= before {
		t.Fatalf("invalidation did not bump ModifyIndex: %v → %v", before, after)
	}
}

func TestQuirkSessionDeleteBehavior(t *testing.T) {
	s := newTestServer(t, nil)
	_, body := s.do(t, "PUT", "/v1/session/create", `{"Behavior":"delete","LockDelay":"0s"}`)
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	s.expect(t, "PUT", "/v1/kv/d/1?acquire="+created.ID, "x", 200, "true")
	s.expect(t, "PUT", "/v1/kv/d/2", "y", 200, "true")
	s.expect(t, "PUT", "/v1/session/destroy/"+created.ID, "", 200, "true")
	s.expect(t, "GET", "/v1/kv/d/1", "", 404, "")
	s.expect(t, "GET", "/v1/kv/d/?keys", "", 200, `["d/2"]`)
}

func TestQuirkSessionCreateDefaults(t *testing.T) {
	s := newTestServer(t, nil)
	for _, c := range []struct {
		body      string
		lockDelay time.Duration
		checks    string
	}{
		{"", 15 * time.Second, `["serfHealth"]`},
		{`{"LockDelay":20}`, 20 * time.Second, `["serfHealth"]`},
		{`{"LockDelay":"20ns"}`, 20 * time.Second, `["serfHealth"]`},
		{`{"LockDelay":"1500ms","NodeChecks":[]}`, 1500 * time.Millisecond, `[]`},
		{`{"LockDelay":2000000000}`, 2 * time.Second, `["serfHealth"]`},
	} {
		resp, body := s.do(t, "PUT", "/v1/session/create", c.body)
		var created struct{ ID string }
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &created) != nil {
			t.Fatalf("create %s: %d %s", c.body, resp.StatusCode, body)
		}
		_, info := s.do(t, "GET", "/v1/session/info/"+created.ID, "")
		want := fmt.Sprintf(`[{"ID":%q,"Name":"","Node":"node-test","LockDelay":%d,"Behavior":"release","TTL":"","NodeChecks":%s,"ServiceChecks":null,`, created.ID, c.lockDelay, c.checks)
		if !strings.HasPrefix(info, want) {
			t.Errorf("create %s: info %s\nwant prefix %s", c.body, info, want)
		}
	}
	_, list := s.do(t, "GET", "/v1/session/node/node-test", "")
	var entries []any
	if json.Unmarshal([]byte(list), &entries); len(entries) != 5 {
		t.Errorf("session/node: %d entries, want 5", len(entries))
	}
	s.expect(t, "GET", "/v1/session/node/other", "", 200, "[]")
}

func TestQuirkTxnReadOnlyHasNoIndexHeader(t *testing.T) {
	s := newTestServer(t, nil)
	s.expect(t, "PUT", "/v1/kv/tr", "v", 200, "true")
	resp, body := s.do(t, "PUT", "/v1/txn", `[{"KV":{"Verb":"get","Key":"tr"}},{"KV":{"Verb":"get-tree","Key":"t"}}]`)
	if resp.StatusCode != 200 || resp.Header.Get("X-Consul-Index") != "" || resp.Header.Get("X-Consul-KnownLeader") != "true" {
		t.Fatalf("read-only txn: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if !strings.Contains(body, `"Value":"dg=="`) || !strings.Contains(body, `"KnownLeader":true`) {
		t.Errorf("read-only txn body %s", body)
	}
	s.expect(t, "PUT", "/v1/txn", `[{"KV":{"Verb":"get","Key":"nope"}}]`, 409,
		`{"Results":null,"Errors":[{"OpIndex":0,"What":"key \"nope\" doesn't exist"}],"Index":2,"LastContact":0,"KnownLeader":true,"ConsistencyLevel":"leader"}`)
	s.expect(t, "PUT", "/v1/txn", `[{"KV":{"Verb":"cas","Key":"tr","Index":1}},{"KV":{"Verb":"explode","Key":"x"}}]`, 409,
		`{"Results":null,"Errors":[{"OpIndex":0,"What":"failed to set key \"tr\", index is stale"},{"OpIndex":1,"What":"unknown KV verb \"explode\""}]}`)
	s.expect(t, "PUT", "/v1/txn", `[{"Node":{"Verb":"get"}}]`, 409,
		`{"Results":null,"Errors":[{"OpIndex":0,"What":"latchkey serves KV operations only"}]}`)
	big := strings.Repeat("A", (512<<10)*4/3+8)
	resp, body = s.do(t, "PUT", "/v1/txn", `[{"KV":{"Verb":"set","Key":"k","Value":"`+big+`"}}]`)
	if resp.StatusCode != 413 || !strings.HasPrefix(body, "Request body(") {
		t.Errorf("oversize txn: %d %s", resp.StatusCode, body)
	}
}

func TestQuirkACL(t *testing.T) {
	s := newTestServer(t, &Options{ACLToken: "s3cret"})
	s.expect(t, "GET", "/v1/kv/a", "", 403, "Permission denied")
	s.expect(t, "PUT", "/v1/kv/a", "v", 403, "Permission denied")
	s.expect(t, "GET", "/v1/agent/self", "", 403, "Permission denied")
	for _, hdr := range [][]string{{"X-Consul-Token", "wrong"}, {"Authorization", "Bearer wrong"}} {
		if resp, _ := s.do(t, "GET", "/v1/kv/a", "", hdr...); resp.StatusCode != 403 {
			t.Errorf("%v: %d, want 403", hdr, resp.StatusCode)
		}
	}
	for _, c := range []struct {
		path string
		hdr  []string
	}{
		{"/v1/kv/a?token=s3cret", nil},
		{"/v1/kv/a", []string{"X-Consul-Token", "s3cret"}},
		{"/v1/kv/a", []string{"Authorization", "Bearer s3cret"}},
	} {
		if resp, _ := s.do(t, "GET", c.path, "", c.hdr...); resp.StatusCode != 404 {
			t.Errorf("%s %v: %d, want 404 (authorized, missing key)", c.path, c.hdr, resp.StatusCode)
		}
	}
	// The official client with the token works.
	if _, err := s.client.KV().Put(&apiPair{Key: "a", Value: []byte("v")}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestQuirkAgentSelf(t *testing.T) {
	s := newTestServer(t, nil)
	name, err := s.client.Agent().NodeName()
	if err != nil || name != "node-test" {
		t.Fatalf("NodeName = %q, %v", name, err)
	}
	leader, err := s.client.Status().Leader()
	if err != nil || leader == "" {
		t.Fatalf("leader = %q, %v", leader, err)
	}
}

func TestBlockingQueryLimit(t *testing.T) {
	s := newTestServer(t, &Options{MaxBlockingQueries: 1})
	s.expect(t, "PUT", "/v1/kv/b", "v", 200, "true")
	resp, _ := s.do(t, "GET", "/v1/kv/b", "")
	idx := resp.Header.Get("X-Consul-Index")
	done := make(chan int, 1)
	go func() {
		r, err := http.Get(s.URL + "/v1/kv/b?wait=2s&index=" + idx)
		if err != nil {
			done <- 0
			return
		}
		r.Body.Close()
		done <- r.StatusCode
	}()
	// The second waiter is refused while the first waits; a non-blocking
	// read is not limited.
	for deadline := time.Now().Add(2 * time.Second); len(s.h.blocking) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first blocking query never started waiting")
		}
		time.Sleep(time.Millisecond)
	}
	s.expect(t, "GET", "/v1/kv/b?wait=2s&index="+idx, "", 429, "Too many blocking queries (limit 1)")
	s.expect(t, "GET", "/v1/kv/b?raw", "", 200, "v")
	s.expect(t, "PUT", "/v1/kv/b", "w", 200, "true") // wakes the first
	if code := <-done; code != 200 {
		t.Fatalf("first blocking query: %d", code)
	}
}

// Live sessions are capped: one more is refused with 429 in Consul's
// plain-text form, writes nothing, and a destroyed session frees a slot.
func TestSessionLimit(t *testing.T) {
	s := newTestServer(t, &Options{MaxSessions: 2})
	var ids []string
	for range 2 {
		_, body := s.do(t, "PUT", "/v1/session/create", "")
		var out struct{ ID string }
		if err := json.Unmarshal([]byte(body), &out); err != nil || out.ID == "" {
			t.Fatalf("create: %q %v", body, err)
		}
		ids = append(ids, out.ID)
	}
	s.expect(t, "PUT", "/v1/session/create", "", 429, "Too many sessions (limit 2)")
	if _, body := s.do(t, "GET", "/v1/session/list", ""); strings.Count(body, `"ID"`) != 2 {
		t.Fatalf("after the refusal: %s", body)
	}
	s.expect(t, "PUT", "/v1/session/destroy/"+ids[0], "", 200, "true")
	if resp, body := s.do(t, "PUT", "/v1/session/create", ""); resp.StatusCode != 200 {
		t.Fatalf("create after a destroy: %d %s", resp.StatusCode, body)
	}
}
