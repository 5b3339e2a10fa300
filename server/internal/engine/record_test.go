package engine

import (
	"bytes"
	"errors"
	"testing"
)

// A record's bytes are the layout on disk since the first release: flags,
// create, modify (8 bytes each, big endian), then the layer's Data.
func TestRecordLayoutUnchanged(t *testing.T) {
	r := Record{Key: "k", Flags: 7, CreateIndex: 2, ModifyIndex: 3, Data: []byte("data")}
	want := []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 'd', 'a', 't', 'a'}
	b := encodeRecord(r)
	if !bytes.Equal(b, want) {
		t.Fatalf("encodeRecord = %v, want %v", b, want)
	}
	got, err := decodeRecord("k", b, true)
	if err != nil || got.Key != r.Key || got.Flags != r.Flags || got.CreateIndex != r.CreateIndex ||
		got.ModifyIndex != r.ModifyIndex || !bytes.Equal(got.Data, r.Data) {
		t.Fatalf("decodeRecord = %+v %v, want %+v", got, err, r)
	}
	if _, err := decodeRecord("k", b[:recordHeader-1], true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a short record: %v, want ErrCorrupt", err)
	}
}
