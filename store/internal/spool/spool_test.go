package spool

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/latchkey/latchkey/store"
)

// A ReadSeeker is used as is, from its offset; any other reader is copied
// to a file that done removes; a reader failing part-way leaves no file.
func TestSeeker(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	sr := strings.NewReader("abcdef")
	sr.Seek(2, io.SeekStart)
	rs, size, done, err := Seeker(sr, "spool", "k")
	if err != nil || size != 4 {
		t.Fatalf("Seeker(ReadSeeker) = %v, size %d, %v; want size 4", rs, size, err)
	}
	done()
	if b, _ := io.ReadAll(rs); string(b) != "cdef" {
		t.Fatalf("read %q, want the rest from its offset", b)
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Fatalf("a ReadSeeker was spooled: %v", left)
	}

	rs, size, done, err = Seeker(iotest.OneByteReader(strings.NewReader("spooled")), "spool", "k")
	if err != nil || size != 7 {
		t.Fatalf("Seeker(reader): size %d, %v; want size 7", size, err)
	}
	f, ok := rs.(*os.File)
	if !ok {
		t.Fatalf("Seeker(reader) = %T, want a temporary file", rs)
	}
	for range 2 { // re-readable
		if b, _ := io.ReadAll(rs); string(b) != "spooled" {
			t.Fatalf("read %q, want spooled", b)
		}
		rs.Seek(0, io.SeekStart)
	}
	done()
	if _, err := os.Stat(f.Name()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spool file after done: %v, want removed", err)
	}

	boom := errors.New("boom")
	if _, _, _, err := Seeker(io.MultiReader(strings.NewReader("part"), iotest.ErrReader(boom)), "spool", "k"); !errors.Is(err, boom) || !errors.Is(err, store.ErrTransient) {
		t.Fatalf("Seeker(failing reader) = %v, want boom as the Put's ErrTransient", err)
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Fatalf("left %v in the temporary directory", left)
	}
}

// A ReadSeeker's value starts at its offset: position 0 is that offset,
// the end is its length, and it reads the same after every rewind.
func TestSeekerFromOffset(t *testing.T) {
	body := strings.NewReader("0123456789abcdef")
	body.Seek(4, io.SeekStart)
	p, size, done, err := Seeker(body, "spool", "k")
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if size != 12 {
		t.Fatalf("size %d, want 12", size)
	}
	for i := 0; i < 3; i++ { // read, rewind, read again (as a resend does)
		b, err := io.ReadAll(p)
		if err != nil || string(b) != "456789abcdef" {
			t.Fatalf("pass %d: %q %v", i, b, err)
		}
		if n, _ := p.Seek(0, io.SeekEnd); n != 12 {
			t.Fatalf("size %d, want 12", n)
		}
		p.Seek(0, io.SeekStart)
	}
	p.Seek(2, io.SeekStart)
	if n, _ := p.Seek(1, io.SeekCurrent); n != 3 {
		t.Fatalf("SeekCurrent = %d, want 3", n)
	}
	if b, _ := io.ReadAll(p); string(b) != "789abcdef" {
		t.Fatalf("after seek: %q", b)
	}
	if _, err := p.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("Seek to a negative position succeeded")
	}
}
