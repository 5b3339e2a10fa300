package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
	"github.com/latchkey/latchkey/store/storeprobe"
	"github.com/latchkey/latchkey/store/storeurl"
)

func TestProbeMemPasses(t *testing.T) {
	c := newCLI(t)
	out := c.ok("probe", "--store", "mem://")
	for _, want := range []string{
		"latchkey probe: mem:// under latchkey-probe/",
		"declared:     create-if-absent compare-and-swap compare-and-delete transactions watch unique-versions\n",
		"not declared: streaming\n",
		"\nSKIP   streaming/not declared",
		"\nPASS   cas/stale version returns ErrConflict and keeps the value ",
		"\nPASS   cleanup/every probe key removed ",
		"\n19 passed, 0 failed, 1 skipped; no key left behind\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^(PASS|FAIL|SKIP) +\S.* \d+\.\d+ms`).FindAllString(out, -1)); n != 20 {
		t.Errorf("%d result lines with a latency; want 20:\n%s", n, out)
	}
}

func TestProbeFileJSON(t *testing.T) {
	c := newCLI(t)
	out := c.ok("probe", "--json", "--prefix", "checks/run-1/")
	var rep probeJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if !rep.OK || rep.Prefix != "checks/run-1" || !strings.HasPrefix(rep.Store, "file:///") || rep.Leftovers == nil || len(rep.Leftovers) != 0 {
		t.Fatalf("report ok=%v prefix=%q store=%q leftovers=%v", rep.OK, rep.Prefix, rep.Store, rep.Leftovers)
	}
	if !rep.Capabilities[storeprobe.CapTransactions] || !rep.Capabilities[storeprobe.CapStreaming] {
		t.Errorf("capabilities %v; a directory store declares transactions and streaming", rep.Capabilities)
	}
	pass := 0
	for _, r := range rep.Results {
		if r.Status == "FAIL" || r.Broken {
			t.Errorf("%s: %s %s", r.Check, r.Status, r.Detail)
		}
		if r.Status == "PASS" {
			pass++
		}
	}
	if pass < 19 {
		t.Errorf("%d checks passed; want at least 19", pass)
	}
	s, err := storeurl.Open(context.Background(), c.env[storeEnv])
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.List(context.Background(), "", nil)
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("store after probe: %v, %v; want it empty", page.Items, err)
	}
}

func TestProbeUsage(t *testing.T) {
	c := newCLI(t)
	c.fails(exitUsage, "unexpected argument", "probe", "extra")
	c.fails(exitUsage, "--prefix", "probe", "--prefix", "a//b")
	c.fails(exitUsage, "positive", "probe", "--op-timeout", "0s")
	c.fails(exitUsage, "flag provided but not defined", "probe", "--nope")
	if out := c.ok("probe", "--help"); !strings.Contains(out, "Usage: latchkey probe") || !strings.Contains(out, "-json") {
		t.Errorf("help: %q", out)
	}
	c.ok("kv", "put", "mine/data", "precious")
	c.fails(exitUsage, "prefix already holds keys", "probe", "--prefix", "mine")
	if got := c.ok("kv", "get", "mine/data"); got != "precious" {
		t.Errorf("the probe touched a used prefix: %q", got)
	}
}

// ignoringPuts declares every capability of memstore but performs each
// conditional put unconditionally, like a server ignoring If-None-Match and
// If-Match.
type ignoringPuts struct{ *memstore.Store }

func (s ignoringPuts) Put(ctx context.Context, key string, value []byte, _ store.Condition) (store.Version, error) {
	return s.Store.Put(ctx, key, value, store.Unconditional)
}

func TestProbeBrokenStoreExits1(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		var out, errb bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		err := probeStore(context.Background(), e, ignoringPuts{memstore.New()}, "test://ignoring", nil, asJSON)
		if code := report(err, &errb, false); code != exitFail {
			t.Fatalf("json=%v: exit %d; want 1\n%s", asJSON, code, out.String())
		}
		const check = "if-absent/second create returns ErrConflict and keeps the value"
		if !strings.Contains(errb.String(), check+" (BROKEN)") || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("json=%v: stderr %q does not name the broken check on one line", asJSON, errb.String())
		}
		if !asJSON {
			if !regexp.MustCompile(`(?m)^FAIL +` + regexp.QuoteMeta(check) + ` +\d+\.\d+ms  BROKEN: `).MatchString(out.String()) {
				t.Errorf("table does not show the broken check:\n%s", out.String())
			}
			continue
		}
		var rep probeJSON
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rep.Results {
			found = found || (r.Check == check && r.Status == "FAIL" && r.Broken)
		}
		if rep.OK || !found {
			t.Errorf("json report ok=%v, broken %q found=%v", rep.OK, check, found)
		}
	}
}

// The probe against latchkey's own server, through both of its APIs and
// the real backends that speak them.
func TestProbeOwnServer(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "probe-access")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "probe-secret-key")
	t.Setenv("AWS_REGION", "us-east-1")
	base, _ := startServe(t, map[string]string{}, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--access-key", "probe-access", "--secret-key", "probe-secret-key", "--anonymous")
	if code, body := httpDo(t, http.MethodPut, base+"/probe-bucket", ""); code != http.StatusOK {
		t.Fatalf("create bucket: %d %s", code, body)
	}
	host := strings.TrimPrefix(base, "http://")
	c := newCLI(t)
	for _, u := range []string{"consul://" + host + "/app", "s3://probe-bucket/app?endpoint=" + base} {
		out := c.ok("probe", "--store", u)
		if !strings.Contains(out, " 0 failed") || !strings.Contains(out, "no key left behind") {
			t.Errorf("%s:\n%s", u, out)
		}
	}
}
