package s3interop

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/server/servertest"
)

//go:embed testdata/boto3_interop.py
var boto3Script []byte

// TestBoto3 runs testdata/boto3_interop.py with the machine's python3 and
// boto3 against our server and reports each of its checks as a subtest.
// In CI (CI=true) a missing python3 or boto3 fails the test; elsewhere it
// skips with the reason.
func TestBoto3(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import boto3").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but python3 with boto3 is not available: %v", err)
		}
		t.Skipf("python3 with boto3 is not available: %v", err)
	}
	srv := servertest.Start(t, nil)
	script := filepath.Join(t.TempDir(), "boto3_interop.py")
	if err := os.WriteFile(script, boto3Script, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), py, script, srv.URL, srv.AccessKey, srv.SecretKey)
	cmd.Env = append(os.Environ(), "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "PYTHONDONTWRITEBYTECODE=1")
	out, runErr := cmd.CombinedOutput()
	checks := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, rest, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(line, "PASS "), "FAIL "), ":")
		switch {
		case strings.HasPrefix(line, "PASS "):
			checks++
			t.Run(name, func(t *testing.T) {})
		case strings.HasPrefix(line, "FAIL "):
			checks++
			t.Run(name, func(t *testing.T) { t.Errorf("boto3: %s", strings.TrimSpace(rest)) })
		default:
			t.Log(line)
		}
	}
	if checks < 7 {
		t.Fatalf("boto3 script ran %d checks, want 7 (exit: %v)\n%s", checks, runErr, out)
	}
	if runErr != nil && !t.Failed() {
		t.Fatalf("boto3 script failed: %v\n%s", runErr, out)
	}
}
