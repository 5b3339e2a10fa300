package s3model

import (
	"context"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/server/internal/enginetest"
)

// TestSSEMasterKeyRecord: the master key's ID is recorded with the first
// sealed version (not before, so a directory without sealed bodies accepts
// any key); afterwards another ID is refused and the recorded one accepted.
// Bucket default encryption survives in the bucket record next to
// versioning.
func TestSSEMasterKeyRecord(t *testing.T) {
	ctx := context.Background()
	e := enginetest.Open(t)
	m := New(e, nil)
	if err := m.UseMasterKey("aaaa"); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateBucket(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.PutVersion(ctx, "b", "plain", nil, Version{ETag: `"x"`, Size: 1, Inline: true}, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := New(e, nil).UseMasterKey("bbbb"); err != nil {
		t.Fatalf("no sealed version yet, another key refused: %v", err)
	}
	if _, err := m.PutVersion(ctx, "b", "sealed", nil, Version{ETag: `"x"`, Size: 1, Inline: true, SSE: SSEAES256}, []byte("sealed bytes")); err != nil {
		t.Fatal(err)
	}
	if err := New(e, nil).UseMasterKey("bbbb"); err == nil || !strings.Contains(err.Error(), "aaaa") {
		t.Fatalf("another key after a sealed version: %v", err)
	}
	if err := New(e, nil).UseMasterKey("aaaa"); err != nil {
		t.Fatal(err)
	}
	if err := m.SetVersioning(ctx, "b", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	if err := m.SetEncryption(ctx, "b", SSEAES256); err != nil {
		t.Fatal(err)
	}
	if b, err := m.Bucket("b"); err != nil || b.SSE != SSEAES256 || b.Versioning != VersioningEnabled {
		t.Fatalf("bucket %+v %v", b, err)
	}
	if err := m.SetEncryption(ctx, "b", ""); err != nil {
		t.Fatal(err)
	}
	if b, err := m.Bucket("b"); err != nil || b.SSE != "" {
		t.Fatalf("bucket after removal %+v %v", b, err)
	}
	f, err := m.Lookup("b", "sealed", "", false)
	if err != nil || f.Version.SSE != SSEAES256 {
		t.Fatalf("lookup %+v %v", f.Version, err)
	}
}
