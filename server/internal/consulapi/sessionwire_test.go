package consulapi

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/latchkey/latchkey/server/internal/consulmodel"
)

// Renew answers a one-element array carrying TTL (RenewPeriodic re-reads
// its interval from it; without TTL it would spin), for sessions with and
// without a TTL.
func TestSessionRenewBody(t *testing.T) {
	s := newTestServer(t, nil)
	for _, ttl := range []string{"15s", ""} {
		_, body := s.do(t, "PUT", "/v1/session/create", `{"TTL":"`+ttl+`","Name":"r"}`)
		var c struct{ ID string }
		json.Unmarshal([]byte(body), &c)
		resp, body := s.do(t, "PUT", "/v1/session/renew/"+c.ID, "")
		var raw []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &raw); resp.StatusCode != 200 || err != nil || len(raw) != 1 {
			t.Fatalf("renew (TTL %q): %d %s", ttl, resp.StatusCode, body)
		}
		if got := string(raw[0]["TTL"]); got != `"`+ttl+`"` {
			t.Errorf("renew (TTL %q): TTL field %s in %s", ttl, got, body)
		}
		if string(raw[0]["ID"]) != `"`+c.ID+`"` || string(raw[0]["Name"]) != `"r"` || string(raw[0]["Behavior"]) != `"release"` {
			t.Errorf("renew body %s", body)
		}
	}
}

// The official client's RenewPeriodic keeps a TTL session alive well past
// 2×TTL, and destroys it when its done channel closes.
func TestClientRenewPeriodic(t *testing.T) {
	s := newTestServer(t, nil) // MinSessionTTL 100ms
	sess := s.client.Session()
	id, _, err := sess.Create(&api.SessionEntry{TTL: "250ms", LockDelay: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := s.client.KV().Acquire(&api.KVPair{Key: "rp", Session: id}, nil); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	done := make(chan struct{})
	renewed := make(chan error, 1)
	go func() { renewed <- sess.RenewPeriodic("250ms", id, nil, done) }()
	time.Sleep(time.Second) // 4×TTL, twice the server's 2×TTL timer
	if p := mustGet(t, s.client.KV(), "rp"); p.Session != id {
		t.Fatalf("lock lost while RenewPeriodic ran: %+v", p)
	}
	close(done)
	if err := <-renewed; err != nil {
		t.Fatalf("RenewPeriodic: %v", err)
	}
	if e, _, err := sess.Info(id, nil); err != nil || e != nil {
		t.Fatalf("session after RenewPeriodic's done: %+v, %v; want destroyed", e, err)
	}
	if p := mustGet(t, s.client.KV(), "rp"); p.Session != "" {
		t.Fatalf("key still held after the session was destroyed: %+v", p)
	}
}

// LockDelay decoding: numbers are nanoseconds, strings Go
// durations, anything under 1000ns is taken as seconds (negative too);
// a bare numeric string is a decode error.
func TestSessionLockDelayDecoding(t *testing.T) {
	s := newTestServer(t, nil)
	for _, c := range []struct {
		body string
		want int64
	}{
		{`{"LockDelay":-5}`, -5e9},
		{`{"LockDelay":999}`, 999e9},
		{`{"LockDelay":1000}`, 1000},
		{`{"LockDelay":"999ns"}`, 999e9},
		{`{"LockDelay":"1µs"}`, 1000},
		{`{"LockDelay":"0"}`, 0},
		{`{"lockdelay":"2s"}`, 2e9}, // field names are case-insensitive
		{`{"LockDelay":null}`, 15e9},
	} {
		resp, body := s.do(t, "PUT", "/v1/session/create", c.body)
		var cr struct{ ID string }
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &cr) != nil {
			t.Errorf("create %s: %d %s", c.body, resp.StatusCode, body)
			continue
		}
		_, info := s.do(t, "GET", "/v1/session/info/"+cr.ID, "")
		var es []consulmodel.Session
		if err := json.Unmarshal([]byte(info), &es); err != nil || len(es) != 1 || es[0].LockDelay != c.want {
			t.Errorf("create %s: info %s, want LockDelay %d", c.body, info, c.want)
		}
	}
	for _, bad := range []string{`{"LockDelay":"20"}`, `{"LockDelay":true}`, `{"LockDelay":"1 s"}`} {
		resp, body := s.do(t, "PUT", "/v1/session/create", bad)
		if resp.StatusCode != 400 || !strings.HasPrefix(body, "Request decode failed: ") {
			t.Errorf("create %s: %d %q, want 400 Request decode failed", bad, resp.StatusCode, body)
		}
	}
}

// A lock-delay refuses only acquire (and txn lock): set, cas, delete and
// release go through.
func TestLockDelayBlocksOnlyAcquire(t *testing.T) {
	s := newTestServer(t, nil)
	create := func() string {
		_, body := s.do(t, "PUT", "/v1/session/create", `{"LockDelay":"1m"}`)
		var c struct{ ID string }
		json.Unmarshal([]byte(body), &c)
		return c.ID
	}
	s1, s2 := create(), create()
	s.expect(t, "PUT", "/v1/kv/d?acquire="+s1, "x", 200, "true")
	s.expect(t, "PUT", "/v1/session/destroy/"+s1, "", 200, "true")
	s.expect(t, "PUT", "/v1/kv/d?acquire="+s2, "y", 200, "false")
	s.expect(t, "PUT", "/v1/kv/d?acquire=", "y", 200, "false") // delay checked first
	s.expect(t, "PUT", "/v1/kv/d", "set", 200, "true")
	e := mustGet(t, s.client.KV(), "d")
	s.expect(t, "PUT", "/v1/kv/d?cas="+itoa(e.ModifyIndex), "cas", 200, "true")
	s.expect(t, "PUT", "/v1/kv/d?release="+s2, "", 200, "false") // not held: false, not refused
	s.expect(t, "DELETE", "/v1/kv/d", "", 200, "true")
	s.expect(t, "PUT", "/v1/kv/d?acquire="+s2, "y", 200, "false") // the delay outlives the key
	s.expect(t, "PUT", "/v1/kv/other?acquire="+s2, "y", 200, "true")
}

// ACL token precedence: ?token=, then X-Consul-Token, then
// Authorization: Bearer; the first one present decides.
func TestACLTokenPrecedence(t *testing.T) {
	s := newTestServer(t, &Options{ACLToken: "right"})
	const denied, unknown = "Permission denied", "ACL not found"
	for _, c := range []struct {
		query string
		hdr   []string
		want  int
		body  string // of a 403
	}{
		{"?token=right", []string{"X-Consul-Token", "wrong"}, 404, ""},
		{"?token=wrong", []string{"X-Consul-Token", "right"}, 403, unknown},
		{"", []string{"X-Consul-Token", "wrong", "Authorization", "Bearer right"}, 403, unknown},
		{"", []string{"X-Consul-Token", "right", "Authorization", "Bearer wrong"}, 404, ""},
		{"", []string{"Authorization", "bearer right"}, 404, ""},
		{"", []string{"Authorization", "Basic right"}, 403, denied},
		{"", []string{"Authorization", "Bearer"}, 403, denied},
		{"", nil, 403, denied},
		{"?token=", []string{"X-Consul-Token", "right"}, 404, ""}, // empty means absent
	} {
		resp, body := s.do(t, "GET", "/v1/kv/k"+c.query, "", c.hdr...)
		if resp.StatusCode != c.want || (c.want == 403 && body != c.body) {
			t.Errorf("%q %v: %d %q, want %d %q", c.query, c.hdr, resp.StatusCode, body, c.want, c.body)
		}
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// Session reads on a server without sessions: 200 [] (never null) with
// X-Consul-Index ≥ 1; writes refuse GET with 405 and their Allow header.
func TestSessionEmptyReadsAndMethods(t *testing.T) {
	s := newTestServer(t, nil)
	for _, p := range []string{"/v1/session/list", "/v1/session/node/node-test", "/v1/session/info/x"} {
		resp := s.expect(t, "GET", p, "", 200, "[]")
		if resp.Header.Get("X-Consul-Index") == "" || resp.Header.Get("X-Consul-Index") == "0" {
			t.Errorf("%s: X-Consul-Index %q", p, resp.Header.Get("X-Consul-Index"))
		}
	}
	for _, p := range []string{"/v1/session/create", "/v1/session/destroy/x", "/v1/session/renew/x"} {
		resp := s.expect(t, "GET", p, "", 405, "method GET not allowed")
		if resp.Header.Get("Allow") != "OPTIONS,PUT" {
			t.Errorf("%s: Allow %q", p, resp.Header.Get("Allow"))
		}
	}
	resp := s.expect(t, "PUT", "/v1/session/list", "", 405, "method PUT not allowed")
	if resp.Header.Get("Allow") != "OPTIONS,GET" {
		t.Errorf("list: Allow %q", resp.Header.Get("Allow"))
	}
}
