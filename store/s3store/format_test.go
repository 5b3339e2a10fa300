package s3store

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// legacyObject is an object as s3store wrote it before values were
// stored as given: the header line, then the value.
func legacyObject(nonce, value string) []byte {
	return []byte(legacyMagic + nonce + "\n" + value)
}

func TestLegacyHeader(t *testing.T) {
	n := newNonce()
	if newNonce() == n {
		t.Fatal("two nonces are equal")
	}
	obj := legacyObject(n, "value")
	if got, ok := parseLegacyHeader(obj[:legacyHeaderLen]); !ok || got != n {
		t.Fatalf("parseLegacyHeader = %q %v", got, ok)
	}
	read := func(obj []byte, meta string) (whole, streamed string) {
		t.Helper()
		r, err := stripLegacyHeader(bytes.NewReader(obj), meta)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		return string(decodeValue(obj, meta)), string(b)
	}
	// Old objects: the header's nonce is the metadata's, or the server
	// kept no metadata.
	for _, meta := range []string{n, ""} {
		if w, s := read(obj, meta); w != "value" || s != "value" {
			t.Fatalf("legacy object, metadata %q: read %q / streamed %q", meta, w, s)
		}
	}
	// Today's objects are the value as is, even one that starts like a
	// header: its metadata carries another (fresh) nonce.
	for _, v := range []string{"", "short", "latchkey-s3store-v1 zz" + strings.Repeat("0", 30) + "\nvalue", strings.Repeat("x", 100), string(obj)} {
		if w, s := read([]byte(v), newNonce()); w != v || s != v {
			t.Fatalf("value %q read as %q / streamed as %q", v, w, s)
		}
	}
}

func TestOffsetSeeker(t *testing.T) {
	body := strings.NewReader("0123456789abcdef")
	body.Seek(4, io.SeekStart) // the value starts at the reader's offset
	p, err := newOffsetSeeker(body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // read, rewind, read again (as the SDK does)
		b, err := io.ReadAll(p)
		if err != nil || string(b) != "456789abcdef" {
			t.Fatalf("pass %d: %q %v", i, b, err)
		}
		if n, _ := p.Seek(0, io.SeekEnd); n != 12 {
			t.Fatalf("size %d", n)
		}
		p.Seek(0, io.SeekStart)
	}
	p.Seek(2, io.SeekStart)
	if n, _ := p.Seek(1, io.SeekCurrent); n != 3 {
		t.Fatalf("SeekCurrent = %d", n)
	}
	if b, _ := io.ReadAll(p); string(b) != "789abcdef" {
		t.Fatalf("after seek: %q", b)
	}
}
