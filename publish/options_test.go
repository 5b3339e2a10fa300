package publish_test

import (
	"context"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/publish/publishtest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// Negative options are an error, as everywhere in latchkey (zero means
// the default), and nothing is written or deleted.
func TestNegativeOptionsRefused(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	old := publishtest.Publish(t, ctx, s, "neg", map[string]string{"a": "old"})
	publishtest.Publish(t, ctx, s, "neg", map[string]string{"a": "new"})
	before := publishtest.Keys(t, ctx, s, "neg")
	for _, o := range []publish.Options{{MaxAge: -time.Second}} {
		if w, err := publish.Begin(ctx, s, "neg", &o); err == nil {
			w.Abort(ctx)
			t.Errorf("Begin(%+v) succeeded; want an error", o)
		}
	}
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	if res, err := publish.GC(ctx, s, "neg", &publish.GCOptions{Grace: -time.Hour, Now: later}); err == nil {
		t.Errorf("GC with a negative Grace succeeded: deleted %v; want an error", res.Deleted)
	}
	if after := publishtest.Keys(t, ctx, s, "neg"); len(after) != len(before) {
		t.Errorf("keys %q after refused options; want %q (generation %s kept)", after, before, old.Generation)
	}
}

// A value at P/pointer that names no generation is not a pointer: GC must
// not take it for "nothing is current" and delete every generation, and
// readers and writers refuse it rather than build on it.
func TestPointerWithoutGenerationRefused(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	publishtest.Publish(t, ctx, s, "pw", map[string]string{"a": "kept"})
	if _, err := s.Put(ctx, "pw/pointer", []byte(`{"token":1}`), store.Unconditional); err != nil {
		t.Fatal(err)
	}
	before := publishtest.Keys(t, ctx, s, "pw")
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	if res, err := publish.GC(ctx, s, "pw", &publish.GCOptions{Now: later}); err == nil {
		t.Errorf("GC over a pointer without a generation succeeded, deleting %v", res.Deleted)
	}
	if _, err := publish.Open(ctx, s, "pw"); err == nil {
		t.Error("Open over a pointer without a generation succeeded")
	}
	if w, err := publish.Begin(ctx, s, "pw", nil); err == nil {
		w.Abort(ctx)
		t.Error("Begin over a pointer without a generation succeeded")
	}
	if after := publishtest.Keys(t, ctx, s, "pw"); len(after) != len(before) {
		t.Errorf("keys %q; want %q", after, before)
	}
}

// ParsePointer and ParseManifest read what Commit wrote.
func TestParseRecords(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	c := publishtest.Publish(t, ctx, s, "pr", map[string]string{"a": "A"})
	e, err := s.Get(ctx, "pr/pointer")
	if err != nil {
		t.Fatal(err)
	}
	p, err := publish.ParsePointer(e.Key, e.Value)
	if err != nil || p.Generation != c.Generation || p.ManifestVersion == "" || p.Committed.IsZero() {
		t.Fatalf("ParsePointer: %+v, %v", p, err)
	}
	me, err := s.Get(ctx, p.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := publish.ParseManifest(p.Manifest, me.Value)
	if err != nil || m.Generation != c.Generation || len(m.Files) != 1 || m.Files[0].Name != "a" || m.Files[0].Version == "" || me.Version != p.ManifestVersion {
		t.Fatalf("ParseManifest: %+v, %v", m, err)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"generation":"g"}`, `{"manifest":"m"}`} {
		if _, err := publish.ParsePointer("k", []byte(bad)); err == nil {
			t.Errorf("ParsePointer(%q) succeeded", bad)
		}
	}
}
