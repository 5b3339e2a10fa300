//go:build linux

package powerfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func writeFile(t *testing.T, path, content string, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

// after cuts the power, materializes the image and returns its directory.
func after(t *testing.T, p *FS) string {
	t.Helper()
	p.Cut()
	return p.Image(t)
}

func content(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// The strict model keeps a file only when both its data and its name were
// synced, and a rename as a whole once either directory is.
func TestStrictModel(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "old"), []byte("durable"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Mount(t, src, Options{Model: Strict})
	d := p.Dir()
	writeFile(t, filepath.Join(d, "unsynced"), "x", false)
	writeFile(t, filepath.Join(d, "dataonly"), "x", true)
	if err := os.Mkdir(filepath.Join(d, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, "sub", "inner"), "inner", true)
	syncDir(t, filepath.Join(d, "sub")) // the parent never is
	if err := os.Mkdir(filepath.Join(d, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, "named"), "named", true)
	writeFile(t, filepath.Join(d, "old"), "overwritten", false)
	syncDir(t, d) // names: unsynced, dataonly, named, tmp, data (but not sub's content... sub is named now)
	writeFile(t, filepath.Join(d, "tmp", "staged"), "staged", true)
	syncDir(t, filepath.Join(d, "tmp"))
	if err := os.Rename(filepath.Join(d, "tmp", "staged"), filepath.Join(d, "data", "v")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, filepath.Join(d, "tmp")) // the rename is atomic: data/v is durable with it
	if err := os.Remove(filepath.Join(d, "named")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d, "lost"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, "lost", "f"), "f", true)
	syncDir(t, filepath.Join(d, "lost")) // its own name never is
	before := p.Syncs()
	out := after(t, p)
	writeFile(t, filepath.Join(d, "late"), "late", true)
	syncDir(t, d)
	if p.Syncs() != before+2 {
		t.Errorf("syncs %d, want %d", p.Syncs(), before+2)
	}
	for name, want := range map[string]string{
		"unsynced": "", "dataonly": "x", "named": "named", "old": "durable", "data/v": "staged", "sub/inner": "inner",
	} {
		got, ok := content(t, filepath.Join(out, name))
		if !ok {
			t.Errorf("%s: missing", name)
		} else if got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"tmp/staged", "late", "lost/f"} {
		if _, ok := content(t, filepath.Join(out, name)); ok {
			t.Errorf("%s survived the cut", name)
		}
	}
}

// Under the journaling model every name is durable at any sync; file data
// only when the file is synced.
func TestJournalingModelAndCutAfter(t *testing.T) {
	p := Mount(t, "", Options{Model: Journaling, CutAfter: 2})
	d := p.Dir()
	if err := os.MkdirAll(filepath.Join(d, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, "a", "b", "nosync"), "n", false)
	writeFile(t, filepath.Join(d, "a", "b", "f"), "f", true) // sync 1
	if p.IsCut() {
		t.Fatal("cut after one sync")
	}
	writeFile(t, filepath.Join(d, "g"), "g", true) // sync 2: the cut
	if !p.IsCut() {
		t.Fatal("not cut after two syncs")
	}
	writeFile(t, filepath.Join(d, "h"), "h", true)
	out := after(t, p)
	for name, want := range map[string]string{"a/b/nosync": "", "a/b/f": "f", "g": "g"} {
		if got, ok := content(t, filepath.Join(out, name)); !ok || got != want {
			t.Errorf("%s: %q %t, want %q", name, got, ok, want)
		}
	}
	if _, ok := content(t, filepath.Join(out, "h")); ok {
		t.Error("h survived the cut")
	}
}

// Hard links, removals and a database's pwrite + fdatasync pattern.
func TestLinksAndRemovals(t *testing.T) {
	p := Mount(t, "", Options{Model: Strict})
	d := p.Dir()
	writeFile(t, filepath.Join(d, "a"), "a", true)
	if err := os.Link(filepath.Join(d, "a"), filepath.Join(d, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d, "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, d)
	if err := os.Remove(filepath.Join(d, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(d, "a")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(d, "b"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("B"), 0); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	// No mmap here: a page fault on a mount this process serves can
	// stall the Go runtime (see the package doc); the engine's tests map
	// bbolt's file from a child process.
	f.Close()
	out := after(t, p)
	for name, want := range map[string]string{"a": "B", "b": "B"} {
		if got, ok := content(t, filepath.Join(out, name)); !ok || got != want {
			t.Errorf("%s: %q %t, want %q", name, got, ok, want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "gone")); err != nil {
		t.Errorf("gone: %v (its removal was never synced)", err)
	}
}
