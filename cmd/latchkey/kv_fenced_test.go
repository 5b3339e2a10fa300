package main

import "testing"

// kv put -fenced writes only with a token at least the newest that wrote
// the key: a zombie holder's older token is refused and changes nothing.
// Under lock run the token comes from $LATCHKEY_FENCING_TOKEN.
func TestKVPutFenced(t *testing.T) {
	c := newCLI(t)
	exe := testBinary(t)
	c.env[asMain] = "1" // CMD below is this test binary acting as latchkey
	c.ok("lock", "run", "locks/res", "--", exe, "kv", "put", "-fenced", "res", "first holder")
	c.ok("lock", "run", "locks/res", "--", exe, "kv", "put", "-fenced", "res", "second holder")
	if got := c.ok("kv", "get", "-fenced", "res"); got != "second holder" {
		t.Fatalf("kv get -fenced res = %q, want the second holder's value", got)
	}
	// The first holder, token 1, resumes as a zombie.
	c.fails(1, "fencing token 1 is older than the newest that wrote it", "kv", "put", "-fenced", "-token", "1", "res", "zombie")
	if got := c.ok("kv", "get", "-fenced", "res"); got != "second holder" {
		t.Fatalf("after the zombie's write res = %q, want it unchanged", got)
	}
	c.env[fencingTokenEnv] = "3"
	c.ok("kv", "put", "-fenced", "res", "third")
	if got := c.ok("kv", "get", "-fenced", "res"); got != "third" {
		t.Fatalf("res = %q, want third", got)
	}
	c.fails(exitUsage, `-token="x": want a positive fencing token, e.g. -token 7`, "kv", "put", "-fenced", "-token", "x", "res", "v")
	c.fails(exitUsage, "-token needs -fenced", "kv", "put", "-token", "4", "res", "v")
	delete(c.env, fencingTokenEnv)
	c.fails(exitUsage, "-fenced needs a token", "kv", "put", "-fenced", "res", "v")
}
