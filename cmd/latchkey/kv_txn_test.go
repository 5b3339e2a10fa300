package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestKVTxn(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "app/version", "1")
	ver := c.modifyIndex("app/version")

	// The payload and the version marker that describes it change together.
	body := `[
	  {"KV": {"Verb": "check-index", "Key": "app/version", "Index": ` + ver + `}},
	  {"KV": {"Verb": "set", "Key": "app/payload", "Value": "cGF5bG9hZC0y"}},
	  {"KV": {"Verb": "cas", "Key": "app/new", "Index": 0, "Value": "eA=="}}
	]`
	out := c.runIn(body, "kv", "txn", "-")
	if out.code != 0 {
		t.Fatalf("txn: exit %d: %s", out.code, out.stderr)
	}
	var res struct {
		Results []struct{ Key, ModifyIndex string }
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || len(res.Results) != 3 || res.Results[1].ModifyIndex == "" {
		t.Fatalf("txn output %q: %v", out.stdout, err)
	}
	if got := c.ok("kv", "get", "app/payload"); strings.TrimSpace(got) != "payload-2" {
		t.Fatalf("payload = %q", got)
	}

	// A stale check: nothing is applied.
	stale := `[
	  {"KV": {"Verb": "set", "Key": "app/payload", "Value": "cGF5bG9hZC0z"}},
	  {"KV": {"Verb": "check-not-exists", "Key": "app/new"}}
	]`
	if o := c.runIn(stale, "kv", "txn", "-"); o.code != exitFail || !strings.Contains(o.stderr, `op 1`) {
		t.Fatalf("stale txn: exit %d, stderr %q", o.code, o.stderr)
	}
	if got := c.ok("kv", "get", "app/payload"); strings.TrimSpace(got) != "payload-2" {
		t.Fatalf("payload after refused txn = %q", got)
	}
	if o := c.runIn(`[{"KV":{"Verb":"lock","Key":"a"}}]`, "kv", "txn", "-"); o.code != exitUsage {
		t.Fatalf("unsupported verb: exit %d", o.code)
	}
	if o := c.runIn(`{`, "kv", "txn", "-"); o.code != exitUsage {
		t.Fatalf("bad JSON: exit %d", o.code)
	}
	c.fails(1, "kv txn: open /nonexistent/txn.json", "kv", "txn", "/nonexistent/txn.json")
	// s3store opens without a request and has no transactions.
	o := c.runIn(`[{"KV": {"Verb": "set", "Key": "a", "Value": "eA=="}}]`, "kv", "--store", "s3://b/p?endpoint=http://127.0.0.1:1", "txn", "-")
	if o.code != exitFail || o.stderr != "latchkey: kv txn: this store has no multi-key transactions\n" {
		t.Fatalf("txn on a store without transactions: exit %d, stderr %q", o.code, o.stderr)
	}
}
