package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeurl"
)

// cli runs latchkey in-process against one store.
type cli struct {
	t   *testing.T
	env map[string]string
	// wrap, when set, wraps every store the commands open.
	wrap func(store.Store) store.Store
	// interrupt, when set, cancels the command's context as main does
	// on SIGTERM once it is closed.
	interrupt chan struct{}
}

type outcome struct {
	code           int
	stdout, stderr string
}

// newCLI returns a cli whose LATCHKEY_STORE is a fresh directory store.
func newCLI(t *testing.T) *cli {
	return &cli{t: t, env: map[string]string{storeEnv: storeurl.FileURL(filepath.Join(t.TempDir(), "store"))}}
}

// environ is a child's environment: the test process's (for PATH and
// the like) with the cli's own variables on top.
func (c *cli) environ() []string {
	kvs := os.Environ()
	for k, v := range c.env {
		kvs = append(kvs, k+"="+v)
	}
	return kvs
}

func (c *cli) runIn(stdin string, args ...string) outcome {
	c.t.Helper()
	// lock run's CMD writes to them from exec's copying goroutines while
	// lock run writes its own messages.
	var out, errb testutil.LockedBuffer
	e := &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return c.env[k] }, environ: c.environ, wrapStore: c.wrap}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.interrupt != nil {
		go func() {
			select {
			case <-c.interrupt:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	err := run(ctx, args, e)
	if c.interrupt != nil && ctx.Err() != nil {
		err = interrupted(err, syscall.SIGTERM)
	}
	code := report(err, &errb, e.isVerbose())
	return outcome{code, out.String(), errb.String()}
}

func (c *cli) run(args ...string) outcome { c.t.Helper(); return c.runIn("", args...) }

// ok runs args, requires exit 0 and returns stdout.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	o := c.run(args...)
	if o.code != 0 {
		c.t.Fatalf("latchkey %s: exit %d, stderr %q", strings.Join(args, " "), o.code, o.stderr)
	}
	return o.stdout
}

// fails runs args and requires the exit code and a one-line stderr
// containing want.
func (c *cli) fails(code int, want string, args ...string) outcome {
	c.t.Helper()
	o := c.run(args...)
	if o.code != code || !strings.Contains(o.stderr, want) || strings.Count(o.stderr, "\n") != 1 {
		c.t.Fatalf("latchkey %s: exit %d, stderr %q; want exit %d and one line containing %q",
			strings.Join(args, " "), o.code, o.stderr, code, want)
	}
	return o
}

func (c *cli) modifyIndex(key string) string {
	c.t.Helper()
	m := regexp.MustCompile(`(?m)^ModifyIndex +(\S+)$`).FindStringSubmatch(c.ok("kv", "get", "-detailed", key))
	if m == nil {
		c.t.Fatalf("no ModifyIndex line for %s", key)
	}
	return m[1]
}

func TestKVPutGetDeleteList(t *testing.T) {
	c := newCLI(t)
	if got := c.ok("kv", "put", "app/a", "one"); got != "Success! Data written to: app/a\n" {
		t.Fatalf("put printed %q", got)
	}
	c.ok("kv", "put", "app/b", "two")
	c.ok("kv", "put", "other", "three")
	if got := c.ok("kv", "get", "app/a"); got != "one" {
		t.Fatalf("get = %q, want the value and nothing else", got)
	}
	if got := c.ok("kv", "list", "app/"); got != "app/a\napp/b\n" {
		t.Fatalf("list app/ = %q", got)
	}
	if got := c.ok("kv", "list"); got != "app/a\napp/b\nother\n" {
		t.Fatalf("list = %q", got)
	}
	if got := c.ok("kv", "delete", "app/a"); got != "Success! Deleted key: app/a\n" {
		t.Fatalf("delete printed %q", got)
	}
	c.fails(1, "no key exists at: app/a", "kv", "get", "app/a")
	c.ok("kv", "delete", "app/a") // deleting a missing key succeeds, as in Consul
}

func TestKVPutFromStdin(t *testing.T) {
	c := newCLI(t)
	if o := c.runIn("line 1\nline 2\n", "kv", "put", "k", "-"); o.code != 0 {
		t.Fatalf("put -: %+v", o)
	}
	if got := c.ok("kv", "get", "k"); got != "line 1\nline 2\n" {
		t.Fatalf("get = %q", got)
	}
}

// Values round-trip byte for byte: a binary value with and without a
// trailing newline, through VALUE, stdin, @FILE and -base64.
func TestKVValuesRoundTripExactly(t *testing.T) {
	c := newCLI(t)
	bin := make([]byte, 1<<20)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	file := filepath.Join(t.TempDir(), "v.bin")
	if err := os.WriteFile(file, bin, 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("kv", "put", "bin", "@"+file)
	if got := c.ok("kv", "get", "bin"); got != string(bin) {
		t.Fatalf("get of a 1 MiB value put from @file: %d bytes, want %d, same bytes", len(got), len(bin))
	}
	if o := c.runIn(string(bin), "kv", "put", "stdin", "-"); o.code != 0 || c.ok("kv", "get", "stdin") != string(bin) {
		t.Fatalf("put - did not round-trip: %+v", o.stderr)
	}
	b64 := base64.StdEncoding.EncodeToString(bin)
	if got := c.ok("kv", "get", "-base64", "bin"); got != b64+"\n" {
		t.Fatalf("get -base64: %d bytes, want the base64 and a newline", len(got))
	}
	c.ok("kv", "put", "-base64", "dec", base64.StdEncoding.EncodeToString([]byte("a\x00b\n")))
	if got := c.ok("kv", "get", "dec"); got != "a\x00b\n" {
		t.Fatalf("put -base64 then get = %q", got)
	}
	c.ok("kv", "put", "at", "@@home")
	if got := c.ok("kv", "get", "at"); got != "@home" {
		t.Fatalf("put @@home stored %q, want the literal @home", got)
	}
	c.fails(2, "not base64", "kv", "put", "-base64", "x", "!!")
	c.ok("kv", "put", "-flags", "0", "f", "v")
	c.fails(2, "-flags 42: latchkey's stores keep no flags", "kv", "put", "-flags", "42", "f", "v2")
	c.fails(1, "no such file", "kv", "put", "x", "@/nonexistent/file")
	if !strings.Contains(c.ok("kv", "get", "-detailed", "-base64", "dec"), "\nValue            YQBiCg==\n") {
		t.Fatalf("get -detailed -base64 lacks the base64 value line")
	}
}

func TestKVGetDetailedLayout(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "svc/config", "hello")
	got := c.ok("kv", "get", "-detailed", "svc/config")
	v := c.modifyIndex("svc/config")
	// Only the fields the store has: no invented Flags 0 or CreateIndex -.
	want := "Key              svc/config\n" +
		"ModifyIndex      " + v + "\n" +
		"Value            hello\n"
	if got != want {
		t.Fatalf("get -detailed =\n%s\nwant\n%s", got, want)
	}
	// A tab in the value is printed as it is (Consul's tabwriter would
	// realign it), and the other lines keep their layout.
	c.ok("kv", "put", "svc/tabbed", "a\tb")
	got = c.ok("kv", "get", "-detailed", "svc/tabbed")
	if !strings.HasSuffix(got, "\nValue            a\tb\n") || !strings.HasPrefix(got, "Key              svc/tabbed\n") {
		t.Fatalf("get -detailed of a tabbed value =\n%q", got)
	}
}

func TestKVPutCAS(t *testing.T) {
	c := newCLI(t)
	// -modify-index=0: create only if absent.
	c.ok("kv", "put", "-cas", "-modify-index=0", "k", "first")
	c.fails(1, "did not write to k: CAS performed with index=0 and key already exists",
		"kv", "put", "-cas", "-modify-index=0", "k", "second")
	v1 := c.modifyIndex("k")
	c.ok("kv", "put", "--cas", "--modify-index", v1, "k", "second")
	// v1 is stale now: refused, one line naming the key, value untouched.
	c.fails(1, "did not write to k: CAS failed", "kv", "put", "-cas", "-modify-index="+v1, "k", "third")
	if got := c.ok("kv", "get", "k"); got != "second" {
		t.Fatalf("value after refused CAS = %q, want second", got)
	}
	// A CAS on a missing key with a version fails too.
	c.fails(1, "did not write to nokey: CAS failed", "kv", "put", "-cas", "-modify-index="+v1, "nokey", "x")
}

func TestKVDeleteCAS(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "k", "v")
	v := c.modifyIndex("k")
	c.ok("kv", "put", "k", "v2")
	c.fails(1, "did not delete key k: CAS failed", "kv", "delete", "-cas", "-modify-index="+v, "k")
	c.ok("kv", "get", "k")
	c.ok("kv", "delete", "-cas", "-modify-index="+c.modifyIndex("k"), "k")
	c.fails(1, "no key exists", "kv", "get", "k")
	c.fails(2, "cannot delete a key that does not exist", "kv", "delete", "-cas", "-modify-index=0", "k")
}

func TestKVUsageErrors(t *testing.T) {
	c := newCLI(t)
	c.fails(2, "-modify-index needs -cas", "kv", "put", "-modify-index=3", "k", "v")
	c.fails(2, "-modify-index needs -cas", "kv", "delete", "-modify-index=3", "k")
	c.fails(2, "kv put: -cas needs -modify-index=VERSION", "kv", "put", "-cas", "k", "v")
	c.fails(2, "kv put: -cas needs -modify-index=VERSION", "kv", "put", "-cas", "-modify-index=", "k", "v")
	c.fails(2, "kv delete: -cas needs -modify-index=VERSION", "kv", "delete", "-cas", "k")
	c.fails(1, "no key exists", "kv", "get", "k") // none of them wrote
	c.fails(2, "flag provided but not defined: -bogus", "kv", "get", "-bogus", "k")
	c.fails(2, "usage: latchkey kv get", "kv", "get")
	c.fails(2, "usage: latchkey kv put", "kv", "put", "k", "v", "extra")
	c.fails(2, `unknown subcommand "frob"`, "kv", "frob")
	c.fails(2, "want KEY -- CMD", "kv", "update", "k")
	c.fails(2, "-max-attempts 0", "kv", "update", "-max-attempts", "0", "k", "--", "cat")
	c.fails(1, "invalid key", "kv", "put", "../escape", "v")
	c.fails(exitUsage, `--store: "nope" is not a store scheme`, "kv", "--store", "nope://", "get", "k")
}

func TestKVHelp(t *testing.T) {
	c := newCLI(t)
	top := c.ok("--help")
	kv := c.ok("kv", "--help")
	put := c.ok("kv", "put", "-h")
	for _, want := range []string{"kv", "LATCHKEY_STORE", "XDG_STATE_HOME", "~/.local/state/latchkey", "Exit codes"} {
		if !strings.Contains(top, want) {
			t.Errorf("latchkey --help lacks %q", want)
		}
	}
	// The summary names every kv subcommand.
	kvLine := regexp.MustCompile(`(?m)^  kv .*$`).FindString(top)
	for name := range kvCommands() {
		if !strings.Contains(kvLine, name) {
			t.Errorf("latchkey --help: kv line %q lacks %q", kvLine, name)
		}
	}
	for _, want := range []string{"kv update [-max-time DUR] [-max-attempts N] KEY -- CMD", "Exit codes", "-modify-index=0", "XDG_STATE_HOME"} {
		if !strings.Contains(kv, want) {
			t.Errorf("latchkey kv --help lacks %q:\n%s", want, kv)
		}
	}
	for _, want := range []string{"-cas", "-modify-index VERSION", "-store URL"} {
		if !strings.Contains(put, want) {
			t.Errorf("latchkey kv put -h lacks %q:\n%s", want, put)
		}
	}
}

func TestStoreSelection(t *testing.T) {
	home := t.TempDir()
	c := &cli{t: t, env: map[string]string{"HOME": home}}
	// No flag, no LATCHKEY_STORE: the default directory store under HOME.
	c.ok("kv", "put", "k", "default")
	if got := c.ok("kv", "--store", storeurl.FileURL(filepath.Join(home, ".local/state/latchkey/store")), "get", "k"); got != "default" {
		t.Fatalf("default store not at ~/.local/state/latchkey/store: %q", got)
	}
	// XDG_STATE_HOME moves it.
	c.env["XDG_STATE_HOME"] = filepath.Join(home, "xdg")
	c.fails(1, "no key exists", "kv", "get", "k")
	c.ok("kv", "put", "k", "xdg")
	if got := c.ok("kv", "-store", storeurl.FileURL(filepath.Join(home, "xdg/latchkey/store")), "get", "k"); got != "xdg" {
		t.Fatalf("default store not at $XDG_STATE_HOME/latchkey/store: %q", got)
	}
	// LATCHKEY_STORE wins over the default, and --store over both.
	c.env[storeEnv] = storeurl.FileURL(filepath.Join(home, "env"))
	c.fails(1, "no key exists", "kv", "get", "k")
	c.fails(1, "no key exists", "kv", "--store", "mem://", "get", "k")
}

func TestReportPrintsOneLine(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		want string
	}{
		{nil, 0, ""},
		{errors.New("kv get: boom"), 1, "latchkey: kv get: boom\n"},
		{errors.New("s3store: get \"k\": transient failure: <Error>\n  <Code>SlowDown</Code>\n</Error>\n"), 1,
			"latchkey: s3store: get \"k\": transient failure: <Error>; <Code>SlowDown</Code>; </Error>\n"},
		{usagef("kv: bad\r\nflag"), 2, "latchkey: kv: bad; flag\n"},
		{&exitError{code: 7}, 7, ""},
	} {
		var b bytes.Buffer
		if code := report(tc.err, &b, false); code != tc.code || b.String() != tc.want {
			t.Errorf("report(%q) = %d, %q; want %d, %q", tc.err, code, b.String(), tc.code, tc.want)
		}
	}
}
