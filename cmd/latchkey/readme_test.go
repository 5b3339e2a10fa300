package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store/storeurl"
)

// readmeBlock returns the first ```sh block after the README heading.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no heading %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatalf("no sh block under %q", heading)
	}
	return block
}

// The README's kv tour runs as written, with `latchkey` this test binary,
// against a fresh directory store: every line exits 0 (set -e) and the
// values are the ones its comments promise.
func TestReadmeKVTour(t *testing.T) {
	block := readmeBlock(t, "## `latchkey kv`: keys from the shell")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, work := t.TempDir(), t.TempDir()
	wrapper := "#!/bin/sh\n" + asMain + "=1 exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "latchkey"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "logo.png"), []byte("\x89PNG\r\n\x1a\n\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := storeurl.FileURL(filepath.Join(t.TempDir(), "store"))
	script := "set -e\n" + block + `
test "$(latchkey kv get app/config)" = '{"replicas": 4}'
test "$(latchkey kv get app/counter)" = 1
test "$(latchkey kv get app/leader)" = me
latchkey kv get app/logo | cmp - logo.png
latchkey kv get app/greeting && exit 9 || true
`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), storeEnv+"="+url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README kv block: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "refused: ") {
		t.Fatalf("the stale check-and-set was not refused:\n%s", out)
	}
}

// Every `latchkey bench` command the README shows parses: its flags exist
// and its key patterns and counts are accepted (running them needs an
// etcd, so they are not run here).
func TestReadmeBenchCommandsParse(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		args, ok := strings.CutPrefix(line, "latchkey bench ")
		if !ok {
			continue
		}
		n++
		args, _, _ = strings.Cut(args, "#")
		var cfg benchConfig
		if err := benchFlags(&cfg).Parse(strings.Fields(args)); err != nil {
			t.Errorf("README: %s: %v", line, err)
			continue
		}
		if _, err := benchScenarios(cfg.keys, cfg.clients); err != nil {
			t.Errorf("README: %s: %v", line, err)
		}
		if _, err := benchCounts("--waiters", cfg.waiters); err != nil {
			t.Errorf("README: %s: %v", line, err)
		}
	}
	if n < 2 {
		t.Fatalf("found %d latchkey bench commands in the README, want the table's and the lock's", n)
	}
}
