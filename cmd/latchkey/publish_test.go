package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inDir runs the test with dir as the working directory.
func inDir(t *testing.T, dir string) {
	t.Helper()
	old, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(old) })
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPublishSnapshotGC(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a.txt": "one", "sub/b.txt": "two"})
	inDir(t, src)

	gen1 := strings.TrimSpace(c.ok("publish", "--prefix", "site", "a.txt", "sub/b.txt"))
	writeFiles(t, src, map[string]string{"a.txt": "ONE"})
	gen2 := strings.TrimSpace(c.ok("publish", "--prefix", "site", "--lease", "locks/site", "./a.txt"))
	if gen1 == "" || gen2 == "" || gen1 == gen2 {
		t.Fatalf("generations %q, %q", gen1, gen2)
	}

	out := filepath.Join(t.TempDir(), "out")
	if got := strings.TrimSpace(c.ok("snapshot", "get", "--prefix", "site", "--out", out)); got != gen2 {
		t.Fatalf("snapshot get printed %q, want %q", got, gen2)
	}
	if b, err := os.ReadFile(filepath.Join(out, "a.txt")); err != nil || string(b) != "ONE" {
		t.Fatalf("a.txt = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(out, "sub/b.txt")); !os.IsNotExist(err) {
		t.Fatalf("sub/b.txt of the older generation written: %v", err)
	}

	dry := c.ok("gc", "--prefix", "site", "--grace", "1ns", "--dry-run")
	if !strings.Contains(dry, "would delete "+gen1) {
		t.Fatalf("dry run: %q", dry)
	}
	keys := c.ok("kv", "list", "site/gen/"+gen1+"/")
	if strings.Count(keys, "\n") != 3 {
		t.Fatalf("dry run deleted something: %q", keys)
	}
	if outp := c.ok("gc", "--prefix", "site", "--grace", "1ns"); !strings.Contains(outp, "deleted "+gen1) {
		t.Fatalf("gc: %q", outp)
	}
	if keys := c.ok("kv", "list", "site/gen/"+gen1+"/"); keys != "" {
		t.Fatalf("gc left %q", keys)
	}
	if keys := c.ok("kv", "list", "site/gen/"+gen2+"/"); keys == "" {
		t.Fatal("gc deleted the current generation")
	}
}

func TestPublishRefusesBadPaths(t *testing.T) {
	c := newCLI(t)
	c.fails(exitUsage, "absolute", "publish", "--prefix", "p", "/etc/hostname")
	c.fails(exitUsage, "'..'", "publish", "--prefix", "p", "../x")
	c.fails(exitUsage, "usage", "publish", "a.txt")
	c.fails(exitFail, "nothing published", "snapshot", "get", "--prefix", "p", "--out", t.TempDir())
}
