package console_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
)

// The console shows a publication as package publish reads it: the
// pointer's generation and token, and every field of every file the
// manifest lists, exactly as publish.Open returns them.
func TestPublicationAsPublishReadsIt(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	f.publishGen("docs", map[string]string{"old.txt": "old"})
	w, err := publish.Begin(ctx, f.store, "docs", &publish.Options{Token: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b/two.txt", "a.txt"} {
		if err := w.Put(ctx, name, strings.NewReader("body of "+name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := publish.Open(ctx, f.store, "docs")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Pointer struct {
			Generation string
			Token      uint64
			Committed  time.Time
		}
		Files       []publish.File
		Generations []struct {
			ID, State, Base string
			Token           uint64
			Files           int
		}
	}
	f.api("/-/api/publication?prefix=docs", &got)
	if got.Pointer.Generation != snap.Generation() || got.Pointer.Token != snap.Token() || got.Pointer.Committed.IsZero() {
		t.Errorf("pointer %+v; publish reads generation %s, token %d", got.Pointer, snap.Generation(), snap.Token())
	}
	want := snap.Files()
	byName := func(a, b publish.File) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(want, byName)
	slices.SortFunc(got.Files, byName)
	if !reflect.DeepEqual(got.Files, want) {
		t.Errorf("console files\n%+v\npublish files\n%+v", got.Files, want)
	}
	for _, g := range got.Generations {
		if g.ID == snap.Generation() && (g.State != "current" || g.Token != 3 || g.Base == "" || g.Files != len(want)) {
			t.Errorf("current generation %+v; want current, token 3, a base, %d files", g, len(want))
		}
	}
}
