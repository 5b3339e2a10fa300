package spool

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

// A ReadSeeker is used as is, from its offset; any other reader is copied
// to a file that done removes; a reader failing part-way leaves no file.
func TestSeeker(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	sr := strings.NewReader("abcdef")
	sr.Seek(2, io.SeekStart)
	rs, done, err := Seeker(sr, "spool-*")
	if err != nil || rs != io.ReadSeeker(sr) {
		t.Fatalf("Seeker(ReadSeeker) = %v, %v; want the reader itself", rs, err)
	}
	done()
	if b, _ := io.ReadAll(rs); string(b) != "cdef" {
		t.Fatalf("read %q, want the rest from its offset", b)
	}

	rs, done, err = Seeker(iotest.OneByteReader(strings.NewReader("spooled")), "spool-*")
	if err != nil {
		t.Fatal(err)
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
	if _, _, err := Seeker(io.MultiReader(strings.NewReader("part"), iotest.ErrReader(boom)), "spool-*"); !errors.Is(err, boom) {
		t.Fatalf("Seeker(failing reader) = %v, want boom", err)
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Fatalf("left %v in the temporary directory", left)
	}
}
