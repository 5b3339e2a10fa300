package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
	bin, work := latchkeyDir(t), t.TempDir()
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

// readmeAddr is the address the README's examples name: latchkey serve's
// default listen address.
const readmeAddr = "127.0.0.1:8500"

// notRun marks a README block that is an illustration, not a command to
// copy (a crontab line, a server in the foreground, a store CI has no
// server for): its first line is "# not run: REASON".
const notRun = "# not run:"

// tourPages are the pages whose ```sh blocks TestReadmeTour runs: the
// README and the pages its tour continues on.
var tourPages = []string{"README.md", "docs/backends.md", "docs/benchmarks.md"}

// shBlock is one ```sh block of a tour page.
type shBlock struct {
	file    string
	line    int // of its first command
	heading string
	text    string
}

func readmeShBlocks(t *testing.T) []shBlock {
	t.Helper()
	var out []shBlock
	for _, page := range tourPages {
		out = append(out, shBlocks(t, page)...)
	}
	return out
}

// shBlocks returns the ```sh blocks of one page (a path from the
// repository's root).
func shBlocks(t *testing.T, page string) []shBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", page))
	if err != nil {
		t.Fatal(err)
	}
	var out []shBlock
	var cur *shBlock
	heading := ""
	fenced := false
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case line == "```sh":
			cur = &shBlock{file: page, line: i + 2, heading: heading}
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
		case !fenced && strings.HasPrefix(line, "#"):
			heading = line
		}
	}
	return out
}

// startsServer reports a block that starts latchkey serve itself.
func startsServer(block string) bool {
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "latchkey serve") && !strings.Contains(l, "--print-env") {
			return true
		}
	}
	return false
}

// tourServer is `latchkey serve` on the README's address, started as a
// user would: no flags, its data in the default directory under HOME.
type tourServer struct {
	t   *testing.T
	env []string
	cmd *exec.Cmd
	log string
}

func (s *tourServer) start() {
	s.t.Helper()
	if c, err := net.DialTimeout("tcp", readmeAddr, time.Second); err == nil {
		c.Close()
		s.t.Fatalf("%s is in use: the README tour needs latchkey serve's default address free", readmeAddr)
	}
	f, err := os.Create(s.log)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	s.cmd = exec.Command(lookPathIn(s.t, s.env, "latchkey"), "serve")
	s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = s.env, f, f
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", readmeAddr, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(s.log)
			s.t.Fatalf("latchkey serve did not listen on %s in 30 s:\n%s", readmeAddr, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *tourServer) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// lookPathIn finds name on the PATH of env.
func lookPathIn(t *testing.T, env []string, name string) string {
	t.Helper()
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(p) {
				if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() {
					return filepath.Join(dir, name)
				}
			}
		}
	}
	t.Fatalf("%s not on the test's PATH", name)
	return ""
}

// TestReadmeTour runs every ```sh block of the README as written, each
// with bash -e in a fresh directory, in the shell of a user who followed
// the README: `latchkey` on PATH (this test binary), a fresh
// `latchkey serve` on its default address with its data under a fresh
// HOME, and `eval "$(latchkey serve --print-env)"` done, as the S3 section
// says. A block that starts latchkey serve itself runs as a first-time
// user's would: the test's server stopped, a fresh HOME, none of those
// variables. The background processes a block starts are ended with it. The files the examples name as the reader's own (logo.png, a.json,
// nightly.sh) are in each block's directory. A block whose first line is
// "# not run: REASON" is an illustration and is skipped (there are few).
// The aws CLI is needed (.ci/run installs it); with CI=true its absence
// fails the test.
func TestReadmeTour(t *testing.T) {
	if _, err := exec.LookPath("aws"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the README tour needs the aws CLI (.ci/run installs it)")
		}
		t.Skip("the README tour needs the aws CLI")
	}
	bin, home := latchkeyDir(t), t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "PATH" || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "LATCHKEY_") ||
			strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "CONSUL_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "PATH="+bin+":"+os.Getenv("PATH"))
	srv := &tourServer{t: t, env: env, log: filepath.Join(home, "serve.log")}
	srv.start()
	t.Cleanup(srv.stop)
	printEnv := exec.Command(lookPathIn(t, env, "latchkey"), "serve", "--print-env")
	printEnv.Env = env
	out, err := printEnv.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("latchkey serve --print-env: %v\n%s", err, stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		env = append(env, strings.TrimPrefix(l, "export "))
	}

	ran, skipped := 0, 0
	for i, b := range readmeShBlocks(t) {
		if strings.HasPrefix(b.text, notRun) {
			skipped++
			continue
		}
		ran++
		if !startsServer(b.text) {
			runTourBlock(t, i, b, env)
			continue
		}
		// Its own server, as a first-time user's: the test's stopped, a
		// fresh HOME (so a fresh data directory) and no credentials yet.
		srv.stop()
		var own []string
		for _, kv := range env {
			if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "CONSUL_") {
				own = append(own, kv)
			}
		}
		runTourBlock(t, i, b, append(own, "HOME="+t.TempDir()))
		srv.start()
	}
	t.Logf("README: %d sh blocks ran, %d marked %q", ran, skipped, notRun)
	if ran < 8 || skipped > ran {
		t.Fatalf("README: %d blocks ran and %d are marked not run: keep the illustrations few", ran, skipped)
	}
}

// runTourBlock runs one block with bash -e in a fresh directory, ends
// every process it left behind, and fails with the block and its output
// unless it exits 0 within a minute.
func runTourBlock(t *testing.T, i int, b shBlock, env []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("block%d", i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"logo.png":   "\x89PNG\r\n\x1a\n\x00",
		"a.json":     `{"job": "a"}` + "\n",
		"nightly.sh": "#!/bin/sh\necho nightly work done\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(dir, ".output")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", b.text)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, logf, logf
	// Its own process group: the background jobs it starts (a server)
	// end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	err = cmd.Run()
	t.Logf("%s:%d: %v", b.file, b.line, time.Since(start).Round(time.Millisecond))
	if cmd.Process != nil {
		pg := -cmd.Process.Pid
		syscall.Kill(pg, syscall.SIGTERM)
		for w := 0; w < 100 && syscall.Kill(pg, 0) == nil; w++ {
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(pg, syscall.SIGKILL)
	}
	if err != nil {
		got, _ := os.ReadFile(logPath)
		t.Errorf("%s:%d (under %q) fails as written: %v\n--- block\n%s--- output\n%s", b.file, b.line, b.heading, err, b.text, got)
	}
}
