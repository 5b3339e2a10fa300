package s3model

import (
	"context"
	"errors"
	"testing"

	"github.com/latchkey/latchkey/server/internal/enginetest"
)

func newModel(t *testing.T) *Model {
	t.Helper()
	e := enginetest.Open(t)
	m := New(e, nil)
	if err := m.CreateBucket(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	return m
}

var errRefused = errors.New("refused")

func put(t *testing.T, m *Model, key, etag string, check Check) (Put, error) {
	t.Helper()
	return m.PutVersion(context.Background(), "b", key, check, Version{ETag: etag, Size: 1, Inline: true}, []byte("x"))
}

// TestPutVersionCheckSeesStateAtCommit: the Check sees the key's current
// state (absent, then the ETag written), and its refusal writes nothing.
func TestPutVersionCheckSeesStateAtCommit(t *testing.T) {
	m := newModel(t)
	var seen []State
	record := func(st State) error { seen = append(seen, st); return nil }
	if _, err := put(t, m, "k", `"1"`, record); err != nil {
		t.Fatal(err)
	}
	p, err := put(t, m, "k", `"2"`, record)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0].Exists || !seen[1].Exists || seen[1].ETag != `"1"` || seen[1].Mod == 0 {
		t.Fatalf("states seen by Check: %+v", seen)
	}
	if p.Version.VersionID != NullVersion || p.Version.ETag != `"2"` || p.Versioning != VersioningOff {
		t.Fatalf("put result: %+v", p)
	}
	if _, err := put(t, m, "k", `"3"`, func(State) error { return errRefused }); !errors.Is(err, errRefused) {
		t.Fatalf("refused put: %v", err)
	}
	f, err := m.Lookup("b", "k", "", false)
	if err != nil || f.Version.ETag != `"2"` || string(f.Data) != "x" {
		t.Fatalf("after a refused put: %+v, %v", f, err)
	}
	if _, err := m.Lookup("nope", "k", "", false); !errors.Is(err, ErrNoSuchBucket) {
		t.Fatalf("missing bucket: %v", err)
	}
}

// TestDeleteManyRefusalsPerKey: a refused key stays, the others are
// deleted in the same Update, and markers on a versioned bucket are
// addressable by ID.
func TestDeleteManyRefusalsPerKey(t *testing.T) {
	m := newModel(t)
	ctx := context.Background()
	if err := m.SetVersioning(ctx, "b", VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "c"} {
		if _, err := put(t, m, k, `"e"`, nil); err != nil {
			t.Fatal(err)
		}
	}
	outs, errs, err := m.DeleteMany(ctx, "b", []Deletion{
		{Key: "a"},
		{Key: "c", Check: func(State) error { return errRefused }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !outs[0].Marker || outs[0].VersionID == "" || !errors.Is(errs[1], errRefused) {
		t.Fatalf("outcomes %+v, errors %v", outs, errs)
	}
	if _, err := m.Lookup("b", "a", "", false); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("deleted key: %v", err)
	}
	var me *Error
	if _, err := m.Lookup("b", "a", outs[0].VersionID, true); !errors.As(err, &me) || me.Err != ErrDeleteMarker || me.Marker == nil {
		t.Fatalf("marker by ID: %v", err)
	}
	if f, err := m.Lookup("b", "c", "", false); err != nil || f.Version.ETag != `"e"` {
		t.Fatalf("refused key: %+v, %v", f, err)
	}
	if err := m.DeleteBucket(ctx, "b"); !errors.Is(err, ErrBucketNotEmpty) {
		t.Fatalf("delete non-empty bucket: %v", err)
	}
}
