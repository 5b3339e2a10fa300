package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/powerfs"
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
	// A path that does not exist is said to be missing, not refused for
	// its form (an absolute DIRECTORY is allowed).
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	if o := c.fails(exitFail, "no such file or directory", "publish", "--prefix", "p", missing); strings.Contains(o.stderr, "absolute") {
		t.Errorf("a missing absolute path was refused as absolute: %q", o.stderr)
	}
	parent := t.TempDir()
	writeFiles(t, parent, map[string]string{"x": "outside", "sub/y": "inside"})
	inDir(t, filepath.Join(parent, "sub"))
	c.fails(exitUsage, "'..'", "publish", "--prefix", "p", "../x")
	c.fails(exitUsage, "usage", "publish", "a.txt")
	c.fails(exitFail, "nothing published", "snapshot", "get", "--prefix", "p", "--out", t.TempDir())
}

func TestPublishRefusesBadNames(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	inDir(t, src)
	writeFiles(t, src, map[string]string{"bad\x01name": "x", "ok": "y"})
	c.fails(exitUsage, "control character", "publish", "--prefix", "p", "ok", "bad\x01name")
	if err := os.Mkdir("dir", 0o755); err != nil {
		t.Fatal(err)
	}
	c.fails(exitUsage, "no files to publish", "publish", "--prefix", "p", "dir") // empty
	c.fails(exitFail, "no such file", "publish", "--prefix", "p", "ok", "missing")
	if keys := c.ok("kv", "list", "p/"); keys != "" {
		t.Fatalf("a refused publish wrote %q", keys)
	}
	if gen := strings.TrimSpace(c.ok("publish", "--prefix", "p", "./ok")); gen == "" {
		t.Fatal("no generation printed")
	}
}

// snapshot get writes one whole generation into a new or empty directory,
// or nothing: a non-empty --out is refused untouched, and a generation
// that fails its checks leaves no directory behind.
func TestSnapshotGetOut(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	inDir(t, src)
	writeFiles(t, src, map[string]string{"a.txt": "one", "sub/b.txt": "two"})
	gen := strings.TrimSpace(c.ok("publish", "--prefix", "site", "a.txt", "sub/b.txt"))

	full := filepath.Join(t.TempDir(), "full")
	writeFiles(t, full, map[string]string{"old.txt": "stale"})
	c.fails(exitFail, `not empty (it holds old.txt); give a new or empty directory, or --force`, "snapshot", "get", "--prefix", "site", "--out", full)
	if ents, _ := os.ReadDir(full); len(ents) != 1 {
		t.Fatalf("a refused snapshot get changed --out: %v", ents)
	}
	// --force replaces the directory whole: the old file is gone, the
	// generation's are there, and nothing is left beside it.
	c.ok("snapshot", "get", "--force", "--prefix", "site", "--out", full)
	if _, err := os.Stat(filepath.Join(full, "old.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--force kept old.txt: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(full, "sub", "b.txt")); err != nil || string(b) != "two" {
		t.Fatalf("--force: sub/b.txt = %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(full)); len(ents) != 1 {
		t.Fatalf("--force left %v beside --out", ents)
	}

	empty := t.TempDir()
	c.ok("snapshot", "get", "--prefix", "site", "--out", empty)
	if b, err := os.ReadFile(filepath.Join(empty, "sub", "b.txt")); err != nil || string(b) != "two" {
		t.Fatalf("sub/b.txt = %q, %v", b, err)
	}
	deep := filepath.Join(t.TempDir(), "x", "y")
	c.ok("snapshot", "get", "--prefix", "site", "--out", deep)
	if b, err := os.ReadFile(filepath.Join(deep, "a.txt")); err != nil || string(b) != "one" {
		t.Fatalf("a.txt under a new parent = %q, %v", b, err)
	}

	c.ok("kv", "put", "site/gen/"+gen+"/data/sub/b.txt", "tampered")
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	c.fails(exitFail, "does not match manifest", "snapshot", "get", "--prefix", "site", "--out", out)
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("a failed snapshot get left %v", ents)
	}
}

// publish DIR publishes the tree under DIR named relative to it; -C DIR
// names paths relative to DIR; --files-from reads paths one a line, or
// NUL-separated with -0, so names with spaces work.
func TestPublishDirectoryAndFileLists(t *testing.T) {
	c := newCLI(t)
	build := t.TempDir()
	writeFiles(t, build, map[string]string{"index.html": "i", "css/site.css": "c", "img/a b.png": "p"})
	gen := strings.TrimSpace(c.ok("publish", "--prefix", "site", build))
	keys := c.ok("kv", "list", "site/gen/"+gen+"/data/")
	for _, n := range []string{"index.html", "css/site.css", "img/a b.png"} {
		if !strings.Contains(keys, "site/gen/"+gen+"/data/"+n+"\n") {
			t.Errorf("publish DIR: %s missing from %q", n, keys)
		}
	}
	gen = strings.TrimSpace(c.ok("publish", "--prefix", "c", "-C", build, "css", "index.html"))
	if keys := c.ok("kv", "list", "c/gen/"+gen+"/data/"); keys != "c/gen/"+gen+"/data/css/site.css\nc/gen/"+gen+"/data/index.html\n" {
		t.Fatalf("-C: %q", keys)
	}
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{"img/a b.png\nindex.html\n", []string{"--files-from", "-"}},
		{"img/a b.png\x00index.html\x00", []string{"--files-from", "-", "-0"}},
	} {
		o := c.runIn(tc.stdin, append([]string{"publish", "--prefix", "l", "-C", build}, tc.args...)...)
		gen := strings.TrimSpace(o.stdout)
		if o.code != 0 {
			t.Fatalf("%v: %+v", tc.args, o)
		}
		if keys := c.ok("kv", "list", "l/gen/"+gen+"/data/"); keys != "l/gen/"+gen+"/data/img/a b.png\nl/gen/"+gen+"/data/index.html\n" {
			t.Fatalf("%v: %q", tc.args, keys)
		}
	}
}

// A joined error of many causes prints the first few and "and N more".
func TestCappedJoinedErrors(t *testing.T) {
	var errs []error
	for i := range 187 {
		errs = append(errs, fmt.Errorf("delete %d: boom", i))
	}
	var b bytes.Buffer
	report(fmt.Errorf("publish p: failed: %w", errors.Join(errs...)), &b, false)
	want := "latchkey: publish p: failed: delete 0: boom; delete 1: boom; delete 2: boom; and 184 more\n"
	if b.String() != want {
		t.Fatalf("report = %q, want %q", b.String(), want)
	}
}

func TestPublishCurrentAndList(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a.txt": "one"})
	c.fails(1, "nothing published", "publish", "current", "--prefix", "site")
	gen1 := strings.TrimSpace(c.ok("publish", "--prefix", "site", src))
	gen2 := strings.TrimSpace(c.ok("publish", "--prefix", "site", src))
	if got := strings.TrimSpace(c.ok("publish", "current", "--prefix", "site")); got != gen2 {
		t.Fatalf("publish current = %q, want %q", got, gen2)
	}
	if got := c.ok("publish", "current", "--prefix", "site", "--json"); !strings.Contains(got, `"generation": "`+gen2+`"`) || !strings.Contains(got, `"name": "a.txt"`) {
		t.Fatalf("publish current --json = %s", got)
	}
	list := regexp.MustCompile(`^` + gen2 + ` current\n` + gen1 + ` superseded at \S+Z, 2 objects, kept until (\S+Z)\n$`)
	got := c.ok("publish", "list", "--prefix", "site")
	m := list.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("publish list = %q", got)
	}
	if until, err := time.Parse(time.RFC3339, m[1]); err != nil || time.Until(until) < 50*time.Minute || time.Until(until) > time.Hour+time.Minute {
		t.Errorf("kept until %s (%v): want about an hour from now (the default grace)", m[1], err)
	}
	if got := c.ok("publish", "list", "--prefix", "site", "--grace", "1ns"); !strings.Contains(got, gen1+" superseded at ") || !strings.HasSuffix(got, ", 2 objects, gc would delete\n") {
		t.Fatalf("publish list --grace 1ns = %q", got)
	}
	var js struct {
		Current     string
		Generations []struct{ ID, State string }
	}
	if err := json.Unmarshal([]byte(c.ok("publish", "list", "--prefix", "site", "--json")), &js); err != nil ||
		js.Current != gen2 || len(js.Generations) != 1 || js.Generations[0].ID != gen1 || js.Generations[0].State != "superseded" {
		t.Fatalf("publish list --json: %+v (%v)", js, err)
	}
}

// Progress goes to a terminal only; its line counts objects and bytes.
func TestPublishProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 2, 3<<20)
	p.done(1 << 20)
	p.reader(strings.NewReader("x")).Read(make([]byte, 1))
	p.done(2 << 20)
	p.finish()
	if b.Len() != 0 {
		t.Fatalf("progress wrote %q to a non-terminal", b.String())
	}
	if got := p.line(p.start.Add(time.Second)); got != "publish: 2/2 objects, 3.0/3.0 MiB, 3.0 MiB/s " {
		t.Fatalf("progress line %q", got)
	}
	c := newCLI(t)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a": "1"})
	if o := c.run("publish", "--prefix", "p", src); o.code != 0 || o.stderr != "" {
		t.Fatalf("publish to a non-terminal: %+v", o)
	}
}

// snapshot get's result survives a power cut once the command has
// returned: on a file system that keeps only what was fsynced (and names
// only once their directory was), the new parents, the tree's directories
// and the final rename are all durable, so the whole snapshot is there
// after the cut.
func TestSnapshotGetSurvivesPowerCut(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	inDir(t, src)
	files := map[string]string{"a.txt": "one", "sub/b.txt": "two", "sub/deeper/c.txt": "three"}
	writeFiles(t, src, files)
	c.ok("publish", "--prefix", "site", "a.txt", "sub/b.txt", "sub/deeper/c.txt")

	p := powerfs.Mount(t, "", powerfs.Options{Model: powerfs.Strict})
	c.ok("snapshot", "get", "--prefix", "site", "--out", filepath.Join(p.Dir(), "x", "y", "snap"))
	p.Cut()
	after := filepath.Join(t.TempDir(), "after")
	if err := p.Materialize(after); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		if b, err := os.ReadFile(filepath.Join(after, "x", "y", "snap", name)); err != nil || string(b) != want {
			t.Errorf("after the cut, %s = %q, %v; want %q", name, b, err, want)
		}
	}
}
