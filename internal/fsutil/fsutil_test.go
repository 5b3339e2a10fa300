package fsutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/internal/powerfs"
)

// Every directory MkdirAll creates survives a power cut right after it
// returns; os.MkdirAll's do not.
func TestMkdirAllSurvivesPowerCut(t *testing.T) {
	for name, mkdir := range map[string]func(string, os.FileMode) error{"fsutil": MkdirAll, "os": os.MkdirAll} {
		p := powerfs.Mount(t, "", powerfs.Options{Model: powerfs.Strict})
		if err := mkdir(filepath.Join(p.Dir(), "a", "b", "c"), 0o755); err != nil {
			t.Fatal(err)
		}
		p.Cut()
		out := p.Image(t)
		_, err := os.Stat(filepath.Join(out, "a", "b", "c"))
		if name == "fsutil" && err != nil {
			t.Errorf("MkdirAll: after a power cut: %v", err)
		}
		if name == "os" && err == nil {
			t.Errorf("os.MkdirAll survived the cut: powerfs keeps names that were never synced")
		}
	}
}

func TestMkdirAllExistingAndFile(t *testing.T) {
	dir := t.TempDir()
	if err := MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("existing directory: %v", err)
	}
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(f, "x"), 0o755); err == nil {
		t.Fatal("MkdirAll under a file succeeded")
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("SyncDir of a missing directory succeeded")
	}
}
