package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair: the master, read by the test,
// and the slave, a terminal for the command.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// publish on a terminal shows its progress (objects, bytes, rate) on one
// rewritten line, ended before the command ends; stdout, not a terminal,
// gets the generation alone. On a pipe it says nothing (TestPublishProgress).
func TestPublishProgressOnTerminal(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a.txt": "one", "b.txt": "two"})
	if err := os.WriteFile(filepath.Join(src, "big.bin"), bytes.Repeat([]byte("x"), 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	master, slave := openPTY(t)
	cmd := binary(t, "publish", "--store", c.env[storeEnv], "--prefix", "p", "-C", src, ".")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, slave
	startProcess(t, cmd)
	slave.Close()
	term := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // EIO once the command's end closed the slave
		term <- string(b)
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("publish: %v", err)
	}
	var got string
	select {
	case got = <-term:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal did not close")
	}
	got = strings.ReplaceAll(got, "\r\n", "\n") // the terminal's own newline translation
	if !strings.Contains(got, "\rpublish: 3/3 objects, 3.0/3.0 MiB, ") || !strings.Contains(got, " MiB/s") || !strings.HasSuffix(got, " \n") {
		t.Fatalf("terminal got %q; want the progress line, rewritten, ending in a newline", got)
	}
	if gen := strings.TrimSpace(out.String()); gen == "" || strings.Contains(gen, "publish:") {
		t.Fatalf("stdout %q; want the generation alone", out.String())
	}
}

// The line moves while one large file is read, not only between files,
// and is redrawn at most every progressEvery.
func TestProgressCountsBytesAsRead(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(0, 0)
	p := &progress{w: &b, total: 1, sizes: 3 << 20, start: now, now: func() time.Time { return now }}
	r := p.reader(bytes.NewReader(make([]byte, 3<<20)))
	buf := make([]byte, 1<<20)
	for range 3 {
		now = now.Add(time.Second)
		r.Read(buf)
		r.Read(buf[:0]) // within progressEvery: no redraw
	}
	p.done(3 << 20)
	p.finish()
	want := "\rpublish: 0/1 objects, 1.0/3.0 MiB, 1.0 MiB/s " +
		"\rpublish: 0/1 objects, 2.0/3.0 MiB, 1.0 MiB/s " +
		"\rpublish: 0/1 objects, 3.0/3.0 MiB, 1.0 MiB/s " +
		"\rpublish: 1/1 objects, 3.0/3.0 MiB, 1.0 MiB/s " +
		"\rpublish: 1/1 objects, 3.0/3.0 MiB, 1.0 MiB/s \n"
	if b.String() != want {
		t.Fatalf("progress wrote\n%q\nwant\n%q", b.String(), want)
	}
}
