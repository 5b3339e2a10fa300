package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// ChromiumEnv names the headless browser the browser tests drive
// (chromedp); .ci/run installs Debian's chromium and sets it.
const ChromiumEnv = "LATCHKEY_TEST_CHROMIUM"

// Chromium returns the browser: $LATCHKEY_TEST_CHROMIUM, else chromium
// (or chromium-browser) on $PATH. Without one the test ends through
// Unavailable (it fails under CI=true and skips elsewhere).
func Chromium(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(ChromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Unavailable(tb, "chromium not found: set %s or install chromium (.ci/run installs Debian's chromium)", ChromiumEnv)
	return ""
}
