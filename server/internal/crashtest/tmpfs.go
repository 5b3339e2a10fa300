package crashtest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
)

// Tmpfs mounts a tmpfs of size bytes on a fresh directory and unmounts it
// at cleanup: a real file system that fills up (ENOSPC) at a size a test
// can reach. It needs root on Linux; elsewhere the test is skipped, except
// under CI=true, where it fails.
func Tmpfs(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	var err error
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		err = fmt.Errorf("needs root on Linux (GOOS %s, euid %d)", runtime.GOOS, os.Geteuid())
	} else if out, merr := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); merr != nil {
		err = fmt.Errorf("mount tmpfs: %v: %s", merr, out)
	}
	if err != nil {
		testutil.Unavailable(t, "cannot mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}
