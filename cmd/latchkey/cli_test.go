package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store/storeurl"
)

// Flags may follow the arguments, latchkey's own --store comes before the
// command, and a word that is not a flag of the command after the
// arguments is told where flags go.
func TestFlagsAfterArguments(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "app/config", "v1")
	if got := c.ok("kv", "get", "app/config", "-detailed"); !strings.Contains(got, "\nModifyIndex ") {
		t.Fatalf("kv get KEY -detailed = %q, want the detailed layout", got)
	}
	c.fails(1, "no key exists at: app/config", "kv", "get", "app/config", "--store", "mem://")
	c.fails(1, "no key exists at: app/config", "--store", "mem://", "kv", "get", "app/config")
	c.fails(1, "no key exists at: app/config", "--store=mem://", "kv", "get", "app/config")
	// The command's own --store wins over latchkey's.
	if got := c.ok("--store", "mem://", "kv", "get", "--store", c.env[storeEnv], "app/config"); got != "v1" {
		t.Fatalf("command --store did not win: %q", got)
	}
	// A value that looks like a flag but is none of kv put's is a value.
	c.ok("kv", "put", "neg", "-5")
	if got := c.ok("kv", "get", "neg"); got != "-5" {
		t.Fatalf("kv put neg -5 stored %q", got)
	}
	c.ok("kv", "put", "-cas", "-modify-index=0", "--", "-dash", "x") // "--" ends the flags
	c.fails(2, "kv get: -bogus is not a flag of kv get; flags go before KEY", "kv", "get", "app/config", "-bogus")
	c.fails(2, "--frob: not a flag of latchkey itself", "--frob", "kv", "get", "k")
	// kv update: flags between KEY and --, and CMD's own flags untouched.
	c.ok("kv", "update", "n", "-max-time", "5s", "--", "printf", "-h")
	if got := c.ok("kv", "get", "n"); got != "-h" {
		t.Fatalf("n = %q, want CMD's -h left to CMD", got)
	}
	c.ok("kv", "update", "n", "printf", "-max-time")
	if got := c.ok("kv", "get", "n"); got != "-max-time" {
		t.Fatalf("n = %q; without --, what follows KEY is CMD", got)
	}
	// lock run parses the same way: flags between KEY and --.
	c.ok("lock", "run", "jobs/x", "--ttl", "5s", "--", "sh", "-c", `test "$LATCHKEY_LOCK_HELD" = 1`)
}

// Every --help exits 0 on stdout; help COMMAND is COMMAND --help;
// --version and version print the build's module version and revision.
func TestHelpAndVersion(t *testing.T) {
	c := newCLI(t)
	if got := c.ok("snapshot", "--help"); !strings.Contains(got, "latchkey snapshot get") {
		t.Fatalf("snapshot --help = %q", got)
	}
	if got, want := c.ok("help", "kv"), c.ok("kv", "--help"); got != want {
		t.Fatalf("help kv =\n%s\nwant kv --help:\n%s", got, want)
	}
	if got := c.ok("help", "kv", "put"); !strings.Contains(got, "latchkey kv put") {
		t.Fatalf("help kv put = %q", got)
	}
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		got := c.ok(args...)
		if !strings.HasPrefix(got, "latchkey "+version+" (module ") || !strings.Contains(got, "go1.") {
			t.Errorf("latchkey %v = %q, want the version, the module version and the Go version", args, got)
		}
	}
}

// SIGTERM and SIGINT end a command after its cleanup with 143 and 130,
// one line saying so in plain words.
func TestSignalExitCodes(t *testing.T) {
	url := storeurl.FileURL(filepath.Join(t.TempDir(), "store"))
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		cmd := binary(t, "kv", "--store", url, "update", "k", "--", "sh", "-c", "echo started >&2; exec sleep 30")
		var errb testutil.LockedBuffer
		cmd.Stderr = &errb
		startProcess(t, cmd)
		if !eventually(10*time.Second, func() bool { return strings.Contains(errb.String(), "started") }) {
			t.Fatalf("CMD did not start: %q", errb.String())
		}
		cmd.Process.Signal(tc.sig)
		err := cmd.Wait()
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != tc.code {
			t.Fatalf("%v: %v, want exit %d; stderr %q", tc.sig, err, tc.code, errb.String())
		}
		want := "latchkey: kv update: k: interrupted by " + signalName(tc.sig) + "; nothing written\n"
		if got := strings.TrimPrefix(errb.String(), "started\n"); got != want {
			t.Fatalf("%v: stderr %q, want %q", tc.sig, got, want)
		}
	}
}

func TestSignalNames(t *testing.T) {
	c := newCLI(t)
	c.fails(1, "kv update: sh was killed by SIGTERM; nothing written", "kv", "update", "k", "--", "sh", "-c", "kill -TERM $$")
	c.fails(3, "kv update: sh exited with status 3; nothing written", "kv", "update", "k", "--", "sh", "-c", "exit 3")
}

// Store failures read in plain words at the CLI: a 403 is "access
// denied", a 501 is "not applied: refused by the store", and no Go
// identifier reaches the user.
func TestErrorsInPlainWords(t *testing.T) {
	status := 403
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := map[int]string{403: "AccessDenied", 501: "NotImplemented"}[status]
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<Error><Code>%s</Code><Message>no</Message></Error>", code)
	}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "AK")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SK")
	t.Setenv("AWS_REGION", "us-east-1")
	c := newCLI(t)
	url := "s3://bucket/p?endpoint=" + srv.URL
	o := c.fails(1, `kv get: access denied (s3store get "k": 403 AccessDenied); check the credentials and the store's permissions`, "kv", "get", "--store", url, "k")
	if strings.Contains(o.stderr, "unsupported") {
		t.Fatalf("stderr %q still says unsupported", o.stderr)
	}
	status = 501
	c.fails(1, `kv put: not applied: refused by the store (s3store put "k": 501 NotImplemented); nothing changed`, "kv", "put", "--store", url, "k", "v")

	for _, tc := range []struct{ err, want string }{
		{"etcdstore: no answer from etcd within Options.RequestTimeout", "etcdstore: no answer from etcd within the request timeout"},
		{"gcsstore: delete: (Options.NoCompareAndDelete)", "gcsstore: delete: (no-compare-and-delete=1 in the store URL)"},
		{"kv get: context deadline exceeded", "kv get: timed out"},
	} {
		var b bytes.Buffer
		report(errors.New(tc.err), &b, false)
		if got := strings.TrimSpace(b.String()); got != "latchkey: "+tc.want {
			t.Errorf("report(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// Without AWS credentials an s3:// command prints one line saying what to
// set, and nothing from the SDK (no "WARN falling back to IMDSv1").
func TestS3MissingCredentialsOneLine(t *testing.T) {
	cmd := binary(t, "kv", "get", "--store", "s3://bucket/p?endpoint=http://127.0.0.1:1", "k")
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_PROFILE=", "AWS_SESSION_TOKEN=",
		"AWS_CONFIG_FILE="+t.TempDir()+"/none", "AWS_SHARED_CREDENTIALS_FILE="+t.TempDir()+"/none",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:1", "AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_S3=")
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), "no AWS credentials") {
		t.Fatalf("%v: %q, want exit 1 and one line naming the missing credentials", err, out)
	}
}

// --timeout bounds a command that talks to a store, and etcd:// on a
// closed port fails at once.
func TestTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	c := newCLI(t)
	consul := "consul://" + strings.TrimPrefix(srv.URL, "http://") + "/app"
	c.fails(1, "timed out", "--timeout", "300ms", "kv", "get", "--store", consul, "k")
	c.env[timeoutEnv] = "300ms"
	c.fails(1, "timed out", "kv", "get", "--store", consul, "k")
	c.fails(2, "--timeout", "--timeout", "soon", "kv", "get", "k")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c.fails(1, "cannot reach etcd ("+addr, "kv", "get", "--store", "etcd://"+addr+"/app", "k")
}

// consul:// pointed at a plain web server says it is not Consul (instead
// of "no key exists"); consul:/host:port (one slash) is refused with the
// right form; latchkey serve passes the check.
func TestConsulURLChecks(t *testing.T) {
	for _, h := range []http.Handler{http.NotFoundHandler(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>hello</html>"))
	})} {
		srv := httptest.NewServer(h)
		addr := strings.TrimPrefix(srv.URL, "http://")
		c := newCLI(t)
		c.fails(1, addr+" does not look like Consul", "kv", "get", "--store", "consul://"+addr+"/app", "k")
		srv.Close()
	}
	c := newCLI(t)
	c.fails(1, "want consul://host:port/prefix (two slashes)", "kv", "get", "--store", "consul:/127.0.0.1:8500/app", "k")
	c.fails(1, "no key exists at: k", "kv", "get", "--store", serveConsul(t, "app"), "k")
}

// The help names every scheme storeurl opens, in latchkey --help and in
// each command's --store flag, so a new backend cannot be left out.
func TestHelpNamesEveryStoreScheme(t *testing.T) {
	c := newCLI(t)
	top, kvPut := c.ok("--help"), c.ok("kv", "put", "--help")
	for _, s := range storeurl.Schemes() {
		if !strings.Contains(top, s+"://") {
			t.Errorf("latchkey --help lacks %s://", s)
		}
		if !strings.Contains(kvPut, s+"://") {
			t.Errorf("kv put --help (--store) lacks %s://", s)
		}
		if _, ok := storeURLForms[s]; !ok {
			t.Errorf("storeURLForms lacks the URL form of %s://", s)
		}
	}
	for s := range storeURLForms {
		if !slices.Contains(storeurl.Schemes(), s) {
			t.Errorf("storeURLForms has %s://, which storeurl does not open", s)
		}
	}
}

// Usage errors exit 2 with one line that names the flag and shows a good
// value: a version that cannot be one of the store's, a --store or
// $LATCHKEY_STORE that is not a store URL.
func TestUsageErrorsNameTheFlag(t *testing.T) {
	c := newCLI(t)
	c.ok("kv", "put", "k", "v")
	c.fails(exitUsage, `-modify-index="abc": this store's versions are numbers; give the ModifyIndex kv get -detailed prints, e.g. -modify-index=17`,
		"kv", "put", "-cas", "-modify-index=abc", "k", "x")
	c.fails(exitUsage, `-modify-index="abc"`, "kv", "delete", "-cas", "-modify-index=abc", "k")
	o := c.fails(exitUsage, "--store: not a URL (missing ']' in host); e.g. --store file:///", "kv", "get", "--store", "consul://[::1", "k")
	if strings.Contains(o.stderr, "storeurl") {
		t.Errorf("stderr %q names the Go package", o.stderr)
	}
	c.fails(exitUsage, `--store: "" is not a store scheme`, "lock", "run", "--store", "/var/lib/x", "k", "--", "true")
	c.env[storeEnv] = "bogus://x"
	c.fails(exitUsage, `$LATCHKEY_STORE: "bogus" is not a store scheme`, "kv", "get", "k")
}

// latchkey help exit-codes lists every exit code; the lock and kv helps
// list their own.
func TestHelpExitCodes(t *testing.T) {
	c := newCLI(t)
	all := c.ok("help", "exit-codes")
	for _, code := range []int{exitOK, exitFail, exitUsage, exitUnavailable, exitUnknown, exitConflict} {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^  %d +\S`, code)).MatchString(all) {
			t.Errorf("help exit-codes does not list %d:\n%s", code, all)
		}
	}
	if lock := c.ok("lock", "--help"); !strings.Contains(lock, "  75  lock run: not acquired because another holder has it") ||
		!strings.Contains(lock, "  69  lock run") || !strings.Contains(lock, "--conflict-exit-code N") {
		t.Errorf("lock --help lacks 69, 75 or --conflict-exit-code:\n%s", lock)
	}
	if kv := c.ok("kv", "--help"); !strings.Contains(kv, "  74  put, delete, update, txn") {
		t.Errorf("kv --help lacks 74:\n%s", kv)
	}
}
