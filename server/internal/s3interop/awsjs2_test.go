package s3interop

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/servertest"
)

//go:embed testdata/awsjs2_interop.js
var awsJS2Script []byte

// TestAWSJSv2 runs testdata/awsjs2_interop.js with node and the AWS SDK for
// JavaScript v2 (npm aws-sdk, which .ci/run installs and names in
// LATCHKEY_TEST_AWSJS2, its node_modules directory) against our server,
// one subtest per check. The v2 signer never signs Content-Type; before
// issue 24 item 1 the very first PUT was refused. In CI (CI=true) a
// missing node or SDK fails the test; elsewhere it skips.
func TestAWSJSv2(t *testing.T) {
	node, err := exec.LookPath("node")
	dir := os.Getenv("LATCHKEY_TEST_AWSJS2")
	if err == nil && dir != "" {
		_, err = os.Stat(filepath.Join(dir, "aws-sdk", "package.json"))
	}
	if err != nil || dir == "" {
		testutil.Unavailable(t, "node or LATCHKEY_TEST_AWSJS2 (node_modules with aws-sdk v2) is missing: %q %v", dir, err)
	}
	t.Setenv("NODE_PATH", dir)
	t.Setenv("AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE", "1")
	srv := servertest.Start(t, nil)
	runCheckScript(t, node, "awsjs2_interop.js", awsJS2Script, 10, srv.URL, srv.AccessKey, srv.SecretKey)
}
