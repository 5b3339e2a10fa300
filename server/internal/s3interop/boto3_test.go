package s3interop

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/servertest"
)

//go:embed testdata/boto3_interop.py
var boto3Script []byte

// s3checksModule is what the boto3 scripts import (testdata/s3checks.py):
// runCheckScript writes it next to every python script.
//
//go:embed testdata/s3checks.py
var s3checksModule []byte

// TestBoto3 runs testdata/boto3_interop.py with the machine's python3 and
// boto3 against our server and reports each of its checks as a subtest.
// In CI (CI=true) a missing python3 or boto3 fails the test; elsewhere it
// skips with the reason.
func TestBoto3(t *testing.T) {
	py := boto3Python(t)
	srv := servertest.Start(t, nil)
	runCheckScript(t, py, "boto3_interop.py", boto3Script, 7, srv.URL, srv.AccessKey, srv.SecretKey)
}

// boto3Python returns the python3 that can import boto3, or fails (CI=true)
// or skips the test.
func boto3Python(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import boto3").Run()
	}
	if err != nil {
		testutil.Unavailable(t, "python3 with boto3 is not available: %v", err)
	}
	return py
}

// runCheckScript runs a check script (python3 or node: one "PASS name" or "FAIL name: why"
// line per check) and reports each check as a subtest; fewer than
// minChecks lines fail the test.
func runCheckScript(t *testing.T, py, name string, script []byte, minChecks int, args ...string) {
	t.Helper()
	script0 := name
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".py") {
		if err := os.WriteFile(filepath.Join(dir, "s3checks.py"), s3checksModule, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), py, append([]string{path}, args...)...)
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
			t.Run(name, func(t *testing.T) { t.Errorf("%s: %s", script0, strings.TrimSpace(rest)) })
		default:
			t.Log(line)
		}
	}
	if checks < minChecks {
		t.Fatalf("%s ran %d checks, want %d (exit: %v)\n%s", name, checks, minChecks, runErr, out)
	}
	if runErr != nil && !t.Failed() {
		t.Fatalf("%s failed: %v\n%s", name, runErr, out)
	}
}
