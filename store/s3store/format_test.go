package s3store

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store/internal/resolve"
)

// legacyObject is an object as s3store wrote it before values were
// stored as given: the header line, then the value.
func legacyObject(nonce, value string) []byte {
	return []byte(legacyMagic + nonce + "\n" + value)
}

func TestLegacyHeader(t *testing.T) {
	n := resolve.NewNonce()
	if resolve.NewNonce() == n {
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
		if w, s := read([]byte(v), resolve.NewNonce()); w != v || s != v {
			t.Fatalf("value %q read as %q / streamed as %q", v, w, s)
		}
	}
}
