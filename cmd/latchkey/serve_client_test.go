package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A fresh serve tells an S3 client what it needs on stderr (endpoint,
// access key id, where the secret is, never the secret), --print-env
// prints export lines, and with them s3://BUCKET/P?create-bucket=1 works
// with no other setup.
func TestServeS3SelfServe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	vars := map[string]string{"LATCHKEY_DATA_DIR": dir, "LATCHKEY_LISTEN": "127.0.0.1:0"}
	url, _, errb := startServeLog(t, vars)
	// The notices follow the startup line on stdout that startServeLog
	// waited for: wait for their last line too.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errb.String(), "--print-env)") && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	log := errb.String()
	for _, want := range []string{"latchkey: S3 endpoint " + url + " (path-style", "AWS_ENDPOINT_URL=" + url + " AWS_ACCESS_KEY_ID=LK",
		"AWS_SECRET_ACCESS_KEY: in " + filepath.Join(dir, "s3-credentials.json"), `eval "$(latchkey serve --print-env)"`} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's stderr lacks %q:\n%s", want, log)
		}
	}
	c := &cli{t: t, env: map[string]string{"LATCHKEY_DATA_DIR": dir, "LATCHKEY_LISTEN": strings.TrimPrefix(url, "http://")}}
	exports := c.ok("serve", "--print-env")
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(exports), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(l, "export "), "=")
		if !ok || !strings.HasPrefix(l, "export ") {
			t.Fatalf("--print-env line %q", l)
		}
		env[k] = v
	}
	if env["AWS_ENDPOINT_URL"] != url || env["CONSUL_HTTP_ADDR"] != strings.TrimPrefix(url, "http://") || len(env["AWS_SECRET_ACCESS_KEY"]) < 20 {
		t.Fatalf("--print-env = %q", exports)
	}
	if strings.Contains(log, env["AWS_SECRET_ACCESS_KEY"]) {
		t.Fatal("serve printed the secret on stderr")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	s3 := &cli{t: t, env: map[string]string{storeEnv: "s3://latchkey-demo/jobs?create-bucket=1"}}
	s3.ok("kv", "put", "a", "1")
	if got := s3.ok("kv", "get", "a"); got != "1" {
		t.Fatalf("kv get through s3:// = %q", got)
	}
	(&cli{t: t, env: map[string]string{"LATCHKEY_DATA_DIR": filepath.Join(t.TempDir(), "new")}}).fails(1, "no S3 credentials", "serve", "--print-env")
}

// serve binds its listener before it creates anything: on a busy port a
// new data directory is not created.
func TestServeBindsBeforeCreating(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "data")
	c := &cli{t: t, env: map[string]string{"LATCHKEY_DATA_DIR": dir}}
	c.fails(1, "address already in use", "serve", "--listen", ln.Addr().String())
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("data directory after a failed bind: %v, want none", err)
	}
}

// --log-format json --log-requests: one JSON access line per request, with
// method, path (no query: no presigned signature), status, duration and
// request id.
func TestServeRequestLogJSON(t *testing.T) {
	vars := map[string]string{"LATCHKEY_DATA_DIR": t.TempDir(), "LATCHKEY_LISTEN": "127.0.0.1:0"}
	url, stop, errb := startServeLog(t, vars, "--log-format", "json", "--log-requests")
	httpDo(t, http.MethodGet, url+"/some-bucket/k?X-Amz-Signature=topsecret&X-Amz-Credential=AK", "")
	httpDo(t, http.MethodGet, url+"/-/health", "")
	stop()
	var reqs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue // the client notices
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		if m["msg"] == "request" {
			reqs = append(reqs, m)
		}
	}
	if len(reqs) != 2 {
		t.Fatalf("%d request lines, want 2:\n%s", len(reqs), errb)
	}
	if strings.Contains(errb.String(), "topsecret") {
		t.Fatal("the log carries the presigned signature")
	}
	for _, r := range reqs {
		if r["level"] != "INFO" || r["method"] != "GET" || r["status"] == nil || r["duration"] == nil || r["request_id"] == "" || r["request_id"] == nil {
			t.Errorf("request line %v lacks a field", r)
		}
	}
	if reqs[0]["path"] != "/some-bucket/k" || reqs[1]["path"] != "/-/health" {
		t.Errorf("paths %v, %v", reqs[0]["path"], reqs[1]["path"])
	}
	(&cli{t: t, env: map[string]string{"LATCHKEY_DATA_DIR": t.TempDir()}}).fails(2, "--log-format", "serve", "--log-format", "xml")
}
