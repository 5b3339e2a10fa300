package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
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
		Results []struct {
			Key         string
			ModifyIndex uint64 // a number, as Consul prints it
		}
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || len(res.Results) != 3 || res.Results[1].ModifyIndex == 0 {
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
	twice := `[{"KV": {"Verb": "check-index", "Key": "app/version", "Index": 1}}, {"KV": {"Verb": "set", "Key": "app/version", "Value": "eA=="}}]`
	if o := c.runIn(twice, "kv", "txn", "-"); o.code != exitUsage || !strings.Contains(o.stderr, "appears twice") {
		t.Fatalf("a key twice: exit %d, stderr %q", o.code, o.stderr)
	}
	if o := c.runIn(`{`, "kv", "txn", "-"); o.code != exitUsage {
		t.Fatalf("bad JSON: exit %d", o.code)
	}
	c.fails(1, "kv txn: open /nonexistent/txn.json", "kv", "txn", "/nonexistent/txn.json")
	// s3store opens without a request and has no transactions.
	t.Setenv("AWS_ACCESS_KEY_ID", "AK")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SK")
	o := c.runIn(`[{"KV": {"Verb": "set", "Key": "a", "Value": "eA=="}}]`, "kv", "--store", "s3://b/p?endpoint=http://127.0.0.1:1", "txn", "-")
	if o.code != exitFail || o.stderr != "latchkey: kv txn: this store has no multi-key transactions\n" {
		t.Fatalf("txn on a store without transactions: exit %d, stderr %q", o.code, o.stderr)
	}
}

// check-index with Index 0 fails on an absent key, as in Consul, instead
// of passing as a check of absence would.
func TestKVTxnCheckIndexZero(t *testing.T) {
	c := newCLI(t)
	body := `[{"KV": {"Verb": "check-index", "Key": "absent", "Index": 0}}, {"KV": {"Verb": "set", "Key": "x", "Value": "eA=="}}]`
	if o := c.runIn(body, "kv", "txn", "-"); o.code != exitFail || !strings.Contains(o.stderr, "op 0") {
		t.Fatalf("check-index 0 of an absent key: exit %d, stderr %q", o.code, o.stderr)
	}
	if o := c.run("kv", "get", "x"); o.code == 0 {
		t.Fatalf("x written by a failed txn: %q", o.stdout)
	}
	// delete-cas with Index 0 passes only when the key is absent.
	c.ok("kv", "put", "present", "1")
	if o := c.runIn(`[{"KV": {"Verb": "delete-cas", "Key": "present", "Index": 0}}]`, "kv", "txn", "-"); o.code != exitFail {
		t.Fatalf("delete-cas 0 of a present key: exit %d, stderr %q", o.code, o.stderr)
	}
	c.ok("kv", "get", "present")
}

// Eight processes race the same transaction shape on the directory store
// (payload and the version marker that describes it, both checked against
// the marker's version), round after round: each round exactly one
// applies, and the payload always matches the marker.
func TestKVTxnProcessesRace(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "app/version", "0")
	for round := range 3 {
		ver := c.modifyIndex("app/version")
		const n = 8
		cmds := make([]*exec.Cmd, n)
		for i := range cmds {
			tag := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%d-%d", round, i))
			cmds[i] = binary(t, "kv", "txn", "-")
			cmds[i].Env = append(cmds[i].Env, storeEnv+"="+c.env[storeEnv])
			cmds[i].Stdin = strings.NewReader(`[
			  {"KV": {"Verb": "cas", "Key": "app/version", "Index": "` + ver + `", "Value": "` + tag + `"}},
			  {"KV": {"Verb": "set", "Key": "app/payload", "Value": "` + tag + `"}}
			]`)
			startProcess(t, cmds[i])
		}
		applied := 0
		for i, cmd := range cmds {
			err := cmd.Wait()
			var ee *exec.ExitError
			switch {
			case err == nil:
				applied++
			case errors.As(err, &ee) && ee.ExitCode() == exitFail:
			default:
				t.Fatalf("round %d process %d: %v", round, i, err)
			}
		}
		if applied != 1 {
			t.Fatalf("round %d: %d transactions applied, want exactly 1", round, applied)
		}
		marker, payload := c.ok("kv", "get", "app/version"), c.ok("kv", "get", "app/payload")
		if marker != payload || !strings.HasPrefix(marker, fmt.Sprintf("%d-", round)) {
			t.Fatalf("round %d: marker %q, payload %q", round, marker, payload)
		}
	}
}
