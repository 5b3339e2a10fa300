package consulmodel

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// testdata/v1/latchkey.db was written by the code before this package
// existed (consulapi and engine.KV, commit 340f0e3), in these Updates:
// app/a=one flags 42 (index 2), app/empty (3), session fixtureID (4),
// app/locked=held flags 7 LockIndex 3 held by it (5), app/gone (6),
// deleted (7), app/a=two flags 43 (8), catalog node n2 (9). A data
// directory of that time opens and reads the same, and takes writes.
const fixtureID = "11111111-2222-4333-8444-555555555555"

func TestReadsDataWrittenBeforeTheModel(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/v1/latchkey.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "latchkey.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(dir, &engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	want := map[string]KV{
		"app/a":      {Key: "app/a", Value: []byte("two"), Flags: 43, CreateIndex: 2, ModifyIndex: 8},
		"app/empty":  {Key: "app/empty", CreateIndex: 3, ModifyIndex: 3},
		"app/locked": {Key: "app/locked", Value: []byte("held"), Flags: 7, CreateIndex: 5, ModifyIndex: 5, LockIndex: 3, Session: fixtureID},
	}
	check := func(t *testing.T, tx *engine.Tx) {
		for key, w := range want {
			got, ok, err := Get(tx, key)
			if err != nil || !ok || !sameKV(got, w) {
				t.Errorf("Get(%q) = %+v %v %v, want %+v", key, got, ok, err, w)
			}
		}
		if _, ok, err := Get(tx, "app/gone"); ok || err != nil {
			t.Errorf("the deleted key reads %v %v", ok, err)
		}
		if keys, err := Keys(tx, "app/"); err != nil || !slices.Equal(keys, []string{"app/a", "app/empty", "app/locked"}) {
			t.Errorf("Keys = %q %v", keys, err)
		}
	}
	if err := e.View(func(tx *engine.Tx) error {
		check(t, tx)
		if a, r := KeysIndex(tx, "app/"), KeysIndex(tx, ""); a != 8 || r != 8 {
			t.Errorf("KeysIndex app/ %d, root %d, want 8 and 8", a, r)
		}
		if s, c := SessionsIndex(tx), CatalogIndex(tx); s != 4 || c != 9 {
			t.Errorf("SessionsIndex %d, CatalogIndex %d, want 4 and 9", s, c)
		}
		se, ok, err := LoadSession(tx, fixtureID)
		if err != nil || !ok || se.Name != "fixture" || se.Node != "n1" || se.TTL != "30s" || se.LockDelay != 15e9 ||
			se.Behavior != BehaviorRelease || !slices.Equal(se.NodeChecks, []string{SerfHealth}) || se.CreateIndex != 4 {
			t.Errorf("LoadSession = %+v %v %v", se, ok, err)
		}
		if held, _ := heldKeys(tx, fixtureID, -1); !slices.Equal(held, []string{"app/locked"}) {
			t.Errorf("held keys %q", held)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The model writes on it: the holder releases its lock.
	m, err := New(e, Options{NodeName: "n1", Datacenter: "dc1", MaxSessions: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if ok, err := m.Write(t.Context(), Op{Verb: VerbUnlock, Key: "app/locked", Value: []byte("held"), Flags: 7, Session: fixtureID}); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	want["app/locked"] = KV{Key: "app/locked", Value: []byte("held"), Flags: 7, CreateIndex: 5, ModifyIndex: 10, LockIndex: 3}
	e.View(func(tx *engine.Tx) error {
		check(t, tx)
		if held, _ := heldKeys(tx, fixtureID, -1); len(held) != 0 {
			t.Errorf("held keys after the release %q", held)
		}
		return nil
	})
}

func sameKV(a, b KV) bool {
	return a.Key == b.Key && bytes.Equal(a.Value, b.Value) && a.Flags == b.Flags && a.CreateIndex == b.CreateIndex &&
		a.ModifyIndex == b.ModifyIndex && a.LockIndex == b.LockIndex && a.Session == b.Session
}
