package consulapi_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
)

// upstreamTests are HashiCorp's own github.com/hashicorp/consul/api
// tests (v1.34.5) that exercise what latchkey serves: every KV, Lock,
// Semaphore and Session test, TestAPI_SessionNodeChecks and
// TestAPI_SessionServiceChecks included (they register catalog nodes,
// services and health checks).
const upstreamTests = `^(TestAPI_Client(PutGetDelete|List_DeleteRecurse|DeleteCAS|CAS|WatchGet|WatchList|Keys_DeleteRecurse|AcquireRelease)` +
	`|TestAPI_KVClientTxn|TestAPI_Lock.*|TestAPI_Semaphore.*` +
	`|TestAPI_Session(CreateDestroy|CreateRenewDestroy|CreateRenewDestroyRenew|CreateDestroyRenewPeriodic|RenewPeriodic_Cancel|Info|Info_NoChecks|Node|NodeChecks|ServiceChecks|List))$`

// TestUpstreamAPITests runs the upstream api tests, unmodified, against
// this package: they start a `consul` executable, and fakeconsul stands in
// for it. .ci/run builds the api test binary and sets
// LATCHKEY_TEST_CONSUL_API_TEST (the binary) and
// LATCHKEY_TEST_CONSUL_API_SRC (the module's source, the tests' working
// directory). Outside CI, missing variables skip the test; with CI=true
// they fail it.
func TestUpstreamAPITests(t *testing.T) {
	bin := testutil.Peer(t, "LATCHKEY_TEST_CONSUL_API_TEST", "the github.com/hashicorp/consul/api v1.34.5 test binary (.ci/run builds it)")
	src := testutil.Peer(t, "LATCHKEY_TEST_CONSUL_API_SRC", "the github.com/hashicorp/consul/api v1.34.5 module's source (.ci/run fetches it)")
	fakebin := t.TempDir()
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", filepath.Join(fakebin, "consul"), "./internal/fakeconsul")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fakeconsul: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", upstreamTests, "-test.parallel", "16", "-test.v")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "PATH="+fakebin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	passed := regexp.MustCompile(`(?m)^--- PASS: (TestAPI_\w+)`).FindAllStringSubmatch(out.String(), -1)
	failed := regexp.MustCompile(`(?m)^--- FAIL: .*$`).FindAllString(out.String(), -1)
	if err != nil || len(failed) > 0 {
		var lines []string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "--- FAIL") || strings.Contains(l, "_test.go:") || strings.HasPrefix(l, "panic") {
				lines = append(lines, l)
			}
		}
		t.Fatalf("upstream api tests: %v\n%s", err, strings.Join(lines, "\n"))
	}
	// The pattern names 38 tests; all must have run and passed.
	if len(passed) < 38 {
		t.Fatalf("only %d upstream tests passed, want 38:\n%s", len(passed), out.String())
	}
	t.Logf("%d upstream github.com/hashicorp/consul/api tests passed", len(passed))
}
