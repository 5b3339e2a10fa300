package consulmodel

import (
	"bytes"
	"testing"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// The entry's bytes are the layout on disk since the first release
// (engine's record header, then lock, session, value): a data directory
// written before the model moved here reads the same.
func TestRecordLayoutUnchanged(t *testing.T) {
	kv := KV{Key: "k", Value: []byte("v"), Flags: 7, LockIndex: 5, Session: "s1"}
	r := toRecord(kv)
	want := []byte{0, 0, 0, 0, 0, 0, 0, 5, 2, 's', '1', 'v'}
	if r.Key != "k" || r.Flags != 7 || !bytes.Equal(r.Data, want) {
		t.Fatalf("toRecord = %+v, want Flags 7 and Data %v", r, want)
	}
	r.CreateIndex, r.ModifyIndex = 2, 3
	got, err := fromRecord(r)
	kv.CreateIndex, kv.ModifyIndex = 2, 3
	if err != nil || got.Key != kv.Key || !bytes.Equal(got.Value, kv.Value) || got.Flags != kv.Flags ||
		got.LockIndex != kv.LockIndex || got.Session != kv.Session || got.CreateIndex != 2 || got.ModifyIndex != 3 {
		t.Fatalf("fromRecord = %+v %v, want %+v", got, err, kv)
	}
	// An empty value reads as nil (Consul's null), no session as "".
	got, err = fromRecord(engine.Record{Key: "e", Data: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0}})
	if err != nil || got.Value != nil || got.Session != "" {
		t.Fatalf("empty entry = %+v %v", got, err)
	}
}

// A record too short or with a session longer than what follows is an
// error wrapping engine.ErrCorrupt, not a panic.
func TestCorruptRecordIsAnError(t *testing.T) {
	for _, data := range [][]byte{nil, {0, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 0, 0, 1, 9, 'x'}} {
		if _, err := fromRecord(engine.Record{Key: "k", Data: data}); err == nil {
			t.Errorf("fromRecord(%v) = nil error", data)
		}
	}
}
