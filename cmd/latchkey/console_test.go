package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/servertest"
)

// consoleLock is one row of the console's /-/api/locks.
type consoleLock struct {
	Key, Holder, State string
	Token              uint64
}

// consoleLogin logs in to the console with the server's S3 credentials
// (the console shows nothing without a login when the server has any) and
// returns a client that keeps the session cookie.
func consoleLogin(t *testing.T, srv *servertest.Server) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(srv.URL+"/ui/login", url.Values{"access_key": {srv.AccessKey}, "secret_key": {srv.SecretKey}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("console login: %d", resp.StatusCode)
	}
	return c
}

func consoleLocks(t *testing.T, c *http.Client, base, prefix string) []consoleLock {
	t.Helper()
	resp, err := c.Get(base + "/-/api/locks?prefix=" + prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Locks []consoleLock }
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
		t.Fatalf("/-/api/locks: %d %s", resp.StatusCode, b)
	}
	return out.Locks
}

// waitLock polls the console until key's lock is in state, and returns it.
func waitLock(t *testing.T, c *http.Client, base, key, state string) consoleLock {
	t.Helper()
	var seen []consoleLock
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		seen = consoleLocks(t, c, base, "jobs/")
		for _, l := range seen {
			if l.Key == key && l.State == state {
				return l
			}
		}
	}
	t.Fatalf("the console never showed %s %s; last: %+v", key, state, seen)
	return consoleLock{}
}

// The console shows a lock held by a real `lock run` process against the
// server's Consul API with its holder and token, and shows it released
// once the process has ended.
func TestConsoleShowsLockRun(t *testing.T) {
	srv := servertest.Start(t, nil)
	store := "consul://" + strings.TrimPrefix(srv.URL, "http://") + "/"
	cmd := binary(t, "lock", "run", "--store", store, "--holder", "cron@web-3", "--ttl", "5s", "jobs/rotate", "--", "sh", "-c", "cat >/dev/null")
	var errb strings.Builder
	cmd.Stderr = &errb
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	startProcess(t, cmd)
	c := consoleLogin(t, srv)
	held := waitLock(t, c, srv.URL, "jobs/rotate", "held")
	if held.Holder != "cron@web-3" || held.Token != 1 {
		t.Fatalf("held lock shown as %+v, want holder cron@web-3, token 1", held)
	}
	stdin.Close() // CMD reads EOF and exits; lock run releases
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lock run: %v; stderr: %s", err, errb.String())
	}
	if got := waitLock(t, c, srv.URL, "jobs/rotate", "released"); got.Token != 1 {
		t.Fatalf("released lock shown as %+v, want token 1 kept", got)
	}
}
