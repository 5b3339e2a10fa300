package s3store

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestHeaderFormat(t *testing.T) {
	n := newNonce()
	h := header(n)
	if len(h) != headerLen || !strings.HasPrefix(string(h), "latchkey-s3store-v1 ") {
		t.Fatalf("header %q (%d bytes)", h, len(h))
	}
	if got, ok := parseHeader(h); !ok || got != n {
		t.Fatalf("parseHeader = %q %v", got, ok)
	}
	if newNonce() == n {
		t.Fatal("two nonces are equal")
	}
	for _, obj := range []string{"", "short", "latchkey-s3store-v1 zz" + strings.Repeat("0", 30) + "\nvalue", strings.Repeat("x", 100)} {
		if got := decodeValue([]byte(obj)); string(got) != obj {
			t.Fatalf("foreign object %q decoded to %q", obj, got)
		}
		r, err := stripHeader(strings.NewReader(obj))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(r); string(b) != obj {
			t.Fatalf("foreign object %q streamed as %q", obj, b)
		}
	}
	obj := append(header(n), "value"...)
	if got := decodeValue(obj); string(got) != "value" {
		t.Fatalf("decoded %q", got)
	}
	r, _ := stripHeader(bytes.NewReader(obj))
	if b, _ := io.ReadAll(r); string(b) != "value" {
		t.Fatalf("streamed %q", b)
	}
}

func TestPrefixedSeeker(t *testing.T) {
	body := strings.NewReader("0123456789abcdef")
	body.Seek(4, io.SeekStart) // the value starts at the reader's offset
	p, err := newPrefixedSeeker([]byte("HEAD"), body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // read, rewind, read again (as the SDK does)
		b, err := io.ReadAll(p)
		if err != nil || string(b) != "HEAD456789abcdef" {
			t.Fatalf("pass %d: %q %v", i, b, err)
		}
		if n, _ := p.Seek(0, io.SeekEnd); n != 16 {
			t.Fatalf("size %d", n)
		}
		p.Seek(0, io.SeekStart)
	}
	p.Seek(6, io.SeekStart)
	if b, _ := io.ReadAll(p); string(b) != "6789abcdef" {
		t.Fatalf("after seek: %q", b)
	}
}
