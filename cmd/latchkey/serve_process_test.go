package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
)

// serveProcess starts `latchkey serve` as a real OS process with the given
// environment and returns it with its base URL, read from its startup
// line. Its stderr is collected in errb.
func serveProcess(t *testing.T, env []string, errb *testutil.LockedBuffer) (*exec.Cmd, string) {
	t.Helper()
	cmd := binary(t, "serve")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startProcess(t, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	i := strings.Index(line, "http://")
	if err != nil || i < 0 {
		t.Fatalf("serve process said %q (%v); stderr: %s", line, err, errb)
	}
	return cmd, strings.Fields(line[i:])[0]
}

// The README's flow as real processes: serve with no flags but the port
// uses the default data directory under the state directory; a second
// serve there is refused; SIGINT stops it with exit 0; after a SIGKILL the
// stale LOCK file does not block a restart, and the data is there.
func TestServeProcessLifecycle(t *testing.T) {
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state, "HOME=" + t.TempDir(), "LATCHKEY_LISTEN=127.0.0.1:0",
		"LATCHKEY_DATA_DIR=", "LATCHKEY_ACL_TOKEN=", "LATCHKEY_ACCESS_KEY=", "LATCHKEY_SECRET_KEY="}
	dir := filepath.Join(state, "latchkey", "server")

	var errb testutil.LockedBuffer
	cmd, url := serveProcess(t, env, &errb)
	if _, got := httpDo(t, http.MethodPut, url+"/v1/kv/x", "hello"); got != "true" {
		t.Fatalf("PUT /v1/kv/x: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "latchkey.db")); err != nil {
		t.Fatalf("default data directory not used: %v", err)
	}

	second := binary(t, "serve")
	second.Env = append(second.Env, env...)
	out, err := second.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFail || !strings.Contains(string(out), dir+" is in use by another latchkey server") {
		t.Fatalf("second serve on the default dir: %v, %q", err, out)
	}

	cmd.Process.Signal(syscall.SIGINT)
	if err := waitExit(cmd, 20*time.Second); err != nil {
		t.Fatalf("serve after SIGINT: %v; stderr: %s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "msg=stopped") {
		t.Fatalf("no clean stop logged: %s", errb.String())
	}

	cmd, _ = serveProcess(t, env, &testutil.LockedBuffer{})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatalf("LOCK file after SIGKILL: %v", err)
	}
	_, url = serveProcess(t, env, &testutil.LockedBuffer{})
	if _, got := httpDo(t, http.MethodGet, url+"/v1/kv/x?raw", ""); got != "hello" {
		t.Fatalf("after SIGKILL and restart, x = %q", got)
	}
}

func waitExit(cmd *exec.Cmd, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		cmd.Process.Kill()
		return <-done
	}
}
