package consulapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Every /v1/txn KV verb over raw HTTP: what a success returns
// and the exact Errors[].What of each failure.
func TestTxnVerbsOnTheWire(t *testing.T) {
	s := newTestServer(t, nil)
	newSess := func() string {
		_, body := s.do(t, "PUT", "/v1/session/create", `{"LockDelay":0}`)
		var c struct{ ID string }
		if err := json.Unmarshal([]byte(body), &c); err != nil || c.ID == "" {
			t.Fatalf("session create: %s", body)
		}
		return c.ID
	}
	s1, s2 := newSess(), newSess()
	s.expect(t, "PUT", "/v1/kv/v/held?acquire="+s1+"&flags=7", "h", 200, "true")
	s.expect(t, "PUT", "/v1/kv/v/plain", "p", 200, "true")
	entry := func(key string) dirEntry {
		_, body := s.do(t, "GET", "/v1/kv/"+key, "")
		var es []dirEntry
		if err := json.Unmarshal([]byte(body), &es); err != nil || len(es) != 1 {
			t.Fatalf("GET %s: %s", key, body)
		}
		return es[0]
	}
	held, plain := entry("v/held"), entry("v/plain")

	fail := func(op, what string) {
		t.Helper()
		want := fmt.Sprintf(`{"Results":null,"Errors":[{"OpIndex":0,"What":%q}]}`, what)
		if !strings.Contains(op, `"set"`) && !strings.Contains(op, `"cas"`) && !strings.Contains(op, `"lock"`) &&
			!strings.Contains(op, `"unlock"`) && !strings.Contains(op, `"delete`) {
			// A read-only txn also carries the query meta in its body.
			want = strings.TrimSuffix(want, "}") + `,"Index":`
		}
		resp, body := s.do(t, "PUT", "/v1/txn", "["+op+"]")
		if resp.StatusCode != 409 || !strings.HasPrefix(body, want) {
			t.Errorf("txn %s: %d %s\nwant 409 %s…", op, resp.StatusCode, body, want)
		}
	}
	kv := func(verb, key string, extra string) string {
		return fmt.Sprintf(`{"KV":{"Verb":%q,"Key":%q%s}}`, verb, key, extra)
	}
	fail(kv("cas", "v/plain", fmt.Sprintf(`,"Index":%d`, plain.ModifyIndex+1)), `failed to set key "v/plain", index is stale`)
	fail(kv("cas", "v/plain", `,"Index":0`), `failed to set key "v/plain", index is stale`)
	fail(kv("lock", "v/held", `,"Session":"`+s2+`"`), `failed to lock key "v/held", lock is already held`)
	fail(kv("lock", "v/x", `,"Session":"nope"`), `invalid session "nope"`)
	fail(kv("lock", "v/x", ``), `missing session`)
	fail(kv("unlock", "v/held", `,"Session":"`+s2+`"`), `failed to unlock key "v/held", lock isn't held, or is held by another session`)
	fail(kv("unlock", "v/missing", `,"Session":"`+s1+`"`), `failed to unlock key "v/missing", lock isn't held, or is held by another session`)
	fail(kv("get", "v/missing", ``), `key "v/missing" doesn't exist`)
	fail(kv("check-index", "v/missing", `,"Index":1`), `failed to check index, key "v/missing" doesn't exist`)
	fail(kv("check-index", "v/plain", fmt.Sprintf(`,"Index":%d`, plain.ModifyIndex+5)),
		fmt.Sprintf(`failed index check for key "v/plain", current modify index %d != %d`, plain.ModifyIndex, plain.ModifyIndex+5))
	fail(kv("check-session", "v/missing", `,"Session":"`+s1+`"`), `failed to check session, key "v/missing" doesn't exist`)
	fail(kv("check-session", "v/held", `,"Session":"`+s2+`"`), fmt.Sprintf(`failed session check for key "v/held", current session %q != %q`, s1, s2))
	fail(kv("check-session", "v/plain", `,"Session":"`+s2+`"`), fmt.Sprintf(`failed session check for key "v/plain", current session "" != %q`, s2))
	fail(kv("check-not-exists", "v/plain", ``), `key "v/plain" exists`)
	fail(kv("delete-cas", "v/plain", `,"Index":1`), `failed to delete key "v/plain", index is stale`)
	fail(kv("explode", "v/plain", ``), `unknown KV verb "explode"`)

	// Successful reads: get and get-tree carry values; the checks return
	// the entry without its value; get-or-empty echoes a missing key's op.
	resp, body := s.do(t, "PUT", "/v1/txn", "["+strings.Join([]string{
		kv("get", "v/held", ``),
		kv("get-tree", "v/", ``),
		kv("check-index", "v/plain", fmt.Sprintf(`,"Index":%d`, plain.ModifyIndex)),
		kv("check-session", "v/held", `,"Session":"`+s1+`"`),
		kv("check-session", "v/plain", ``),
		kv("check-not-exists", "v/missing", ``),
		kv("get-or-empty", "v/missing", `,"Flags":9,"Index":4,"Session":"`+s2+`","Value":"eA=="`),
	}, ",")+"]")
	var rr struct {
		Results []struct{ KV *dirEntry }
		Errors  []txnError
		Index   uint64
	}
	if err := json.Unmarshal([]byte(body), &rr); resp.StatusCode != 200 || err != nil {
		t.Fatalf("read txn: %d %s", resp.StatusCode, body)
	}
	want := []dirEntry{
		held,        // get
		held, plain, // get-tree
		plainNoValue(plain),
		plainNoValue(held),
		plainNoValue(plain),
		{Key: "v/missing", Flags: 9, Session: s2, ModifyIndex: 4}, // get-or-empty echo, no value
	}
	if len(rr.Results) != len(want) {
		t.Fatalf("read txn results %s, want %d", body, len(want))
	}
	for i, w := range want {
		got := rr.Results[i].KV
		if got == nil || fmt.Sprint(*got) != fmt.Sprint(w) {
			t.Errorf("result %d = %+v, want %+v", i, got, w)
		}
	}
	if rr.Index < held.ModifyIndex || rr.Errors != nil {
		t.Errorf("read txn meta: Index %d, Errors %v", rr.Index, rr.Errors)
	}

	// Writes return their entries without values: set keeps the holder
	// and resets LockIndex and Flags; deletes return nothing; delete-cas
	// of a missing key succeeds.
	resp, body = s.do(t, "PUT", "/v1/txn", "["+strings.Join([]string{
		kv("set", "v/held", `,"Value":"bmV3"`),
		kv("delete-cas", "v/missing", `,"Index":77`),
		kv("delete", "v/plain", ``),
		kv("get-tree", "v/", ``),
	}, ",")+"]")
	var wr struct {
		Results []struct{ KV *dirEntry }
		Errors  []txnError
	}
	if err := json.Unmarshal([]byte(body), &wr); resp.StatusCode != 200 || err != nil || len(wr.Results) != 2 {
		t.Fatalf("write txn: %d %s", resp.StatusCode, body)
	}
	set, tree := wr.Results[0].KV, wr.Results[1].KV
	if set.Value != nil || set.Session != s1 || set.LockIndex != 0 || set.Flags != 0 || set.CreateIndex != held.CreateIndex || set.ModifyIndex <= held.ModifyIndex {
		t.Errorf("set result %+v (was %+v)", set, held)
	}
	if string(tree.Value) != "new" || tree.ModifyIndex != set.ModifyIndex {
		t.Errorf("get-tree after the txn's own writes: %+v", tree)
	}
	if strings.Contains(body, `"X-Consul-Index"`) || resp.Header.Get("X-Consul-Index") != "" {
		t.Errorf("write txn carries X-Consul-Index")
	}
}

func plainNoValue(e dirEntry) dirEntry { e.Value = nil; return e }

// Txn limits: a value over MaxValueSize is 413 with Consul's text (only
// reachable when the body limit is the larger); a single-key verb with an
// empty key is 400; the tree verbs take the empty prefix.
func TestTxnLimits(t *testing.T) {
	s := newTestServer(t, &Options{MaxValueSize: 8, MaxTxnBody: 1 << 20})
	s.expect(t, "PUT", "/v1/txn", `[{"KV":{"Verb":"set","Key":"a","Value":"MDEyMzQ1Njc="}},{"KV":{"Verb":"set","Key":"big","Value":"MDEyMzQ1Njc4"}}]`,
		413, `Value for key "big" is too large (9 > 8 bytes)`)
	s.expect(t, "GET", "/v1/kv/a", "", 404, "")
	s.expect(t, "PUT", "/v1/txn", `[{"KV":{"Verb":"set","Key":""}}]`, 400, "Missing key name (operation 0, set)")
	s.expect(t, "PUT", "/v1/txn", `[{"KV":{"Verb":"get","Key":"a"}},{"KV":{"Verb":"check-index","Key":""}}]`, 400, "Missing key name (operation 1, check-index)")
	s.expect(t, "PUT", "/v1/txn", `[{"KV":{"Verb":"set","Key":"t/1","Value":"eA=="}},{"KV":{"Verb":"delete-tree","Key":""}}]`, 200,
		`{"Results":[{"KV":{"LockIndex":0,"Key":"t/1","Flags":0,"Value":null,"CreateIndex":`+idxOf(t, s)+`,"ModifyIndex":`+idxOf(t, s)+`}}],"Errors":null}`)
	s.expect(t, "GET", "/v1/kv/?keys", "", 200, "[]")

	// The body is decoded before the query is parsed, and only a
	// read-only txn parses the query options (a write txn reads dc).
	s.expect(t, "PUT", "/v1/txn?index=x", "[", 400, "Failed to parse body: unexpected end of JSON input")
	s.expect(t, "PUT", "/v1/txn?index=x&stale&consistent", `[{"KV":{"Verb":"get-tree","Key":"t/"}}]`, 400, "Cannot specify ?stale with ?consistent, conflicting semantics.")
	resp, body := s.do(t, "PUT", "/v1/txn?index=x&stale&consistent", `[{"KV":{"Verb":"set","Key":"t/2"}}]`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"Key":"t/2"`) {
		t.Errorf("write txn with query options Consul ignores: %d %s", resp.StatusCode, body)
	}
	s.expect(t, "PUT", "/v1/txn?dc=other", `[{"KV":{"Verb":"set","Key":"t/3"}}]`, 500, "No path to datacenter")
}

// idxOf predicts the index of the next write: one past the current one.
func idxOf(t *testing.T, s *testServer) string {
	t.Helper()
	return fmt.Sprint(s.e.Index() + 1)
}
