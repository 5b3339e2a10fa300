package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestBenchAgainstInProcessServer(t *testing.T) {
	c := &cli{t: t, env: map[string]string{}}
	out := c.ok("bench", "--duration", "300ms", "--clients", "1,4")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	rows := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 9 || f[0] != "latchkey" {
			continue
		}
		rows++
		if ops, err := strconv.ParseFloat(f[3], 64); err != nil || ops <= 0 {
			t.Errorf("row %q: ops/s %q", l, f[3])
		}
		if f[1] == "distinct" && f[7] != "0" {
			t.Errorf("row %q: conflicts on distinct keys", l)
		}
		if b, err := strconv.ParseFloat(f[8], 64); err != nil || b < 1 {
			t.Errorf("row %q: updates per commit %q", l, f[8])
		}
	}
	if rows != 4 {
		t.Fatalf("want 4 result rows (distinct and hot × 1 and 4 clients), got %d:\n%s", rows, out)
	}
}

func TestBenchBadFlags(t *testing.T) {
	c := &cli{t: t, env: map[string]string{}}
	c.fails(exitUsage, "--duration", "bench", "--duration", "11m")
	c.fails(exitUsage, "--clients", "bench", "--clients", "0")
	c.fails(exitUsage, "--keys", "bench", "--keys", "warm")
	c.fails(exitUsage, "--value-size", "bench", "--value-size", "1000000")
}

// fakeEtcd implements the two etcd v3 JSON gateway calls the bench makes,
// with the request and response field names etcd 3.4's gateway uses
// (checked by hand against Debian's etcd-server 3.4.23), so the test pins
// the wire shape and the CAS semantics the bench relies on.
func fakeEtcd(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	rev := int64(1)
	mods := map[string]int64{}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v3/kv/range":
			var req struct{ Key string }
			json.NewDecoder(r.Body).Decode(&req)
			out := map[string]any{"header": map[string]any{"revision": strconv.FormatInt(rev, 10)}}
			if m, ok := mods[req.Key]; ok {
				out["kvs"] = []map[string]any{{"key": req.Key, "mod_revision": strconv.FormatInt(m, 10)}}
			}
			json.NewEncoder(w).Encode(out)
		case "/v3/kv/txn":
			var req struct {
				Compare []struct {
					Target, Result, Key string
					Create              string `json:"create_revision"`
					Mod                 string `json:"mod_revision"`
				}
				Success []struct {
					RequestPut struct{ Key, Value string } `json:"request_put"`
				}
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Compare) != 1 || len(req.Success) != 1 {
				http.Error(w, "bad txn", 400)
				return
			}
			cmp := req.Compare[0]
			if _, err := base64.StdEncoding.DecodeString(cmp.Key); err != nil || cmp.Result != "EQUAL" {
				http.Error(w, "bad compare", 400)
				return
			}
			cur := mods[cmp.Key]
			var ok bool
			switch cmp.Target {
			case "CREATE":
				ok = cmp.Create == "0" && cur == 0
			case "MOD":
				ok = cmp.Mod == strconv.FormatInt(cur, 10) && cur != 0
			default:
				http.Error(w, "bad target", 400)
				return
			}
			out := map[string]any{"header": map[string]any{"revision": strconv.FormatInt(rev, 10)}}
			if ok {
				rev++
				mods[req.Success[0].RequestPut.Key] = rev
				out["succeeded"] = true // etcd omits it when false
			}
			json.NewEncoder(w).Encode(out)
		default:
			http.NotFound(w, r)
		}
	}))
}

func TestBenchEtcdSideBySide(t *testing.T) {
	etcd := fakeEtcd(t)
	defer etcd.Close()
	c := &cli{t: t, env: map[string]string{}}
	out := c.ok("bench", "--duration", "200ms", "--clients", "2", "--etcd", etcd.URL)
	if !strings.Contains(out, "latchkey / etcd") {
		t.Fatalf("no ratio table:\n%s", out)
	}
	etcdRows := 0
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 9 && f[0] == "etcd" {
			etcdRows++
			if f[1] == "hot" && f[3] == "0" {
				t.Errorf("no CAS applied against etcd: %q", l)
			}
		}
	}
	if etcdRows != 2 {
		t.Fatalf("want 2 etcd rows:\n%s", out)
	}
}
