package main

import (
	"context"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server"
)

// httpDo sends a request with body and returns the answer's status code
// and body (what could be read of it: callers compare it); a request that
// gets no answer ends the test.
func httpDo(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startServe runs `latchkey serve args...` in-process with environment vars
// and returns its base URL once it prints its startup line, and a stop
// function returning the exit code.
func startServe(t *testing.T, vars map[string]string, args ...string) (string, func() int) {
	t.Helper()
	url, stop, _ := startServeLog(t, vars, args...)
	return url, stop
}

// serveConsul starts `latchkey serve` in-process on a fresh data directory
// and a loopback port, and returns the store URL of its Consul KV API
// under prefix (consul://HOST:PORT/PREFIX).
func serveConsul(t *testing.T, prefix string) string {
	t.Helper()
	url, _ := startServe(t, map[string]string{"LATCHKEY_DATA_DIR": t.TempDir(), "LATCHKEY_LISTEN": "127.0.0.1:0"})
	return "consul://" + strings.TrimPrefix(url, "http://") + "/" + prefix
}

// startServeLog is startServe that also returns the server's stderr (its
// log).
func startServeLog(t *testing.T, vars map[string]string, args ...string) (string, func() int, *testutil.LockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	out, errb := &testutil.LockedBuffer{}, &testutil.LockedBuffer{}
	e := &env{stdin: strings.NewReader(""), stdout: out, stderr: errb, getenv: func(k string) string { return vars[k] }}
	done := make(chan int, 1)
	go func() { done <- report(run(ctx, append([]string{"serve"}, args...), e), errb, false) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "\n") {
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited %d before listening: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("serve printed nothing")
		}
		time.Sleep(5 * time.Millisecond)
	}
	line := out.String()
	i := strings.Index(line, "http://")
	if i < 0 || !strings.HasPrefix(line, "latchkey: serving Consul KV API and S3 API on ") {
		t.Fatalf("startup line %q", line)
	}
	url := strings.Fields(line[i:])[0]
	var once sync.Once
	var code int
	stop := func() int {
		once.Do(func() { cancel(); code = <-done })
		return code
	}
	t.Cleanup(func() { stop() })
	return url, stop, errb
}

func TestServeFromEnvironment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	url, stop := startServe(t, map[string]string{
		"LATCHKEY_DATA_DIR":  dir,
		"LATCHKEY_LISTEN":    "127.0.0.1:0",
		"LATCHKEY_ANONYMOUS": "true",
	})
	if code, body := httpDo(t, http.MethodGet, url+"/-/health", ""); code != 200 || !strings.Contains(body, `"status":"ok"`) {
		t.Fatalf("health: %d %s", code, body)
	}
	// A second server on the same directory is refused with a clear message,
	// also when it asks for the same port (as two default `serve` do).
	c := &cli{t: t, env: map[string]string{"LATCHKEY_DATA_DIR": dir, "LATCHKEY_LISTEN": "127.0.0.1:0"}}
	c.fails(exitFail, "in use by another latchkey server", "serve")
	c.env["LATCHKEY_LISTEN"] = strings.TrimPrefix(url, "http://")
	c.fails(exitFail, "in use by another latchkey server", "serve")
	if code := stop(); code != 0 {
		t.Fatalf("serve exit %d after SIGINT-equivalent", code)
	}
}

func TestServeFlagBeatsEnvironment(t *testing.T) {
	dir := t.TempDir()
	url, _ := startServe(t, map[string]string{"LATCHKEY_LISTEN": "127.0.0.1:1"},
		"--data-dir", dir, "--listen", "127.0.0.1:0")
	if strings.HasSuffix(url, ":1") {
		t.Fatalf("env won over the flag: %s", url)
	}
}

func TestServeDefaultDataDir(t *testing.T) {
	state := t.TempDir()
	startServe(t, map[string]string{"XDG_STATE_HOME": state}, "--listen", "127.0.0.1:0")
	c := &cli{t: t, env: map[string]string{"LATCHKEY_DATA_DIR": filepath.Join(state, "latchkey", "server"), "LATCHKEY_LISTEN": "127.0.0.1:0"}}
	c.fails(exitFail, "in use by another latchkey server", "serve")
}

func TestServeBadCommandLine(t *testing.T) {
	c := &cli{t: t, env: map[string]string{"LATCHKEY_DATA_DIR": t.TempDir()}}
	c.fails(exitUsage, "serve:", "serve", "--nope")
	c.fails(exitUsage, "unexpected argument", "serve", "extra")
	c.fails(exitUsage, "--log-level", "serve", "--log-level", "loud")
	c.fails(exitUsage, "serve: --access-key and --secret-key go together", "serve", "--access-key", "AK")
	c.fails(exitUsage, "serve: --access-key and --secret-key go together", "serve", "--secret-key", "SK")
	c.fails(exitUsage, "serve: --tls-cert and --tls-key go together", "serve", "--tls-cert", "c.pem")
	c.env["LATCHKEY_ANONYMOUS"] = "maybe"
	c.fails(exitUsage, "LATCHKEY_ANONYMOUS", "serve")
	if out := c.ok("serve", "--help"); !strings.Contains(out, "LATCHKEY_SECRET_KEY") {
		t.Fatalf("serve --help does not document the environment: %s", out)
	}
}

// Every serve flag has a LATCHKEY_* variable, --help documents both, and
// the variable really sets what the flag sets.
func TestServeEveryFlagHasDocumentedVariable(t *testing.T) {
	var probe server.Config
	var logs logOptions
	flags := serveFlags(&probe, &logs)
	help := (&cli{t: t, env: map[string]string{}}).ok("serve", "--help")
	values := map[string]string{"listen": "127.0.0.1:1", "shutdown-timeout": "3s", "consul-max-sessions": "5", "log-level": "debug", "log-format": "json", "http-max-conns-per-client": "50"}
	partners := map[string]string{"access-key": "secret-key", "secret-key": "access-key", "tls-cert": "tls-key", "tls-key": "tls-cert"}
	for _, f := range flags {
		if !strings.HasPrefix(f.env, "LATCHKEY_") || f.env != "LATCHKEY_"+strings.ToUpper(strings.ReplaceAll(f.name, "-", "_")) {
			t.Errorf("--%s reads $%s, want $LATCHKEY_%s", f.name, f.env, strings.ToUpper(strings.ReplaceAll(f.name, "-", "_")))
		}
		if !strings.Contains(help, "--"+f.name+" ") || !strings.Contains(help, "$"+f.env+"\n") {
			t.Errorf("serve --help does not document --%s and $%s", f.name, f.env)
		}
		v, ok := values[f.name]
		switch {
		case ok:
		case f.isBool:
			v = "true"
		default:
			v = "/x/" + f.name
		}
		// Flags that go in pairs get their partner from the environment.
		base := map[string]string{"LATCHKEY_DATA_DIR": "/d"}
		if p, ok := partners[f.name]; ok {
			base["LATCHKEY_"+strings.ToUpper(strings.ReplaceAll(p, "-", "_"))] = "/x/" + p
		}
		vars := maps.Clone(base)
		vars[f.env] = v
		e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return vars[k] }}
		fromEnv, _, err := serveConfig(e, nil)
		if err != nil {
			t.Fatalf("$%s=%s: %v", f.env, v, err)
		}
		vars = base
		arg := "--" + f.name + "=" + v
		fromFlag, _, err := serveConfig(e, []string{arg})
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		fromEnv.Logger, fromFlag.Logger = nil, nil
		if !reflect.DeepEqual(fromEnv, fromFlag) {
			t.Errorf("$%s=%s gives %+v, %s gives %+v", f.env, v, fromEnv, arg, fromFlag)
		}
		if _, paired := partners[f.name]; !paired && f.name != "log-level" && f.name != "log-format" && reflect.DeepEqual(fromEnv, server.Config{DataDir: "/d"}) && f.name != "data-dir" {
			t.Errorf("$%s=%s changed nothing", f.env, v)
		}
	}
}

// serve never runs without fsync, whatever the environment says: the
// running server logs fsync=true.
func TestServeAlwaysFsyncs(t *testing.T) {
	vars := map[string]string{"LATCHKEY_DATA_DIR": t.TempDir(), "LATCHKEY_LISTEN": "127.0.0.1:0",
		"LATCHKEY_NO_SYNC": "true", "LATCHKEY_NOSYNC": "1", "LATCHKEY_FSYNC": "false"}
	_, stop, log := startServeLog(t, vars)
	if !strings.Contains(log.String(), "fsync=true") {
		t.Fatalf("serve log does not say fsync=true: %s", log)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// Beyond loopback without --acl-token, serve refuses and says how to
// proceed; --consul-anonymous is the explicit opt-in.
func TestServeRefusesOpenConsulBeyondLoopback(t *testing.T) {
	c := &cli{t: t, env: map[string]string{"LATCHKEY_DATA_DIR": t.TempDir()}}
	c.fails(exitFail, "--consul-anonymous", "serve", "--listen", "0.0.0.0:0")
	url, stop := startServe(t, map[string]string{"LATCHKEY_DATA_DIR": t.TempDir(), "LATCHKEY_CONSUL_ANONYMOUS": "1"},
		"--listen", "0.0.0.0:0")
	if !strings.Contains(url, "0.0.0.0:") && !strings.Contains(url, "[::]:") {
		t.Fatalf("served on %s", url)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
