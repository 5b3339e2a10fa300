package engine

import (
	"errors"
	"strings"
	"testing"
)

// A negative option is a mistake, not a request for the default: Open
// refuses it and names the field. Zero (and a nil *Options) means the
// documented default.
func TestOptionsNegativeIsAnError(t *testing.T) {
	for name, o := range map[string]Options{
		"TombstoneTTL":       {NoSync: true, TombstoneTTL: -1},
		"LogBytes":           {NoSync: true, LogBytes: -1},
		"CheckpointInterval": {NoSync: true, CheckpointInterval: -1},
	} {
		e, err := Open(t.TempDir(), &o)
		if err == nil {
			e.Close()
			t.Errorf("Open with a negative %s succeeded", name)
			continue
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Open with a negative %s: %v, want the field named", name, err)
		}
	}
	for _, o := range []*Options{nil, {}} {
		r, err := o.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if r.TombstoneTTL != DefaultTombstoneTTL || r.LogBytes != DefaultLogBytes || r.CheckpointInterval != DefaultCheckpointInterval {
			t.Errorf("defaults %+v", r)
		}
	}
}

// A bucket opened with ReadBucket refuses writes, inside Update too: they
// would reach bbolt without reaching the write-ahead log, and a crash
// before the next checkpoint would lose them after they were acknowledged.
func TestReadBucketRefusesWrites(t *testing.T) {
	e := openNoSync(t)
	if _, err := e.Update(t.Context(), func(tx *Tx) error {
		tx.Touch("rb")
		return tx.Bucket("rb").Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Update(t.Context(), func(tx *Tx) error {
		tx.Touch("rb")
		b := tx.ReadBucket("rb")
		if err := b.Put([]byte("k"), []byte("w")); !errors.Is(err, ErrReadOnlyBucket) {
			t.Errorf("Put through ReadBucket: %v, want ErrReadOnlyBucket", err)
		}
		if err := b.Delete([]byte("k")); !errors.Is(err, ErrReadOnlyBucket) {
			t.Errorf("Delete through ReadBucket: %v, want ErrReadOnlyBucket", err)
		}
		c := b.Cursor()
		c.First()
		if err := c.Delete(); !errors.Is(err, ErrReadOnlyBucket) {
			t.Errorf("Cursor.Delete through ReadBucket: %v, want ErrReadOnlyBucket", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.View(func(tx *Tx) error {
		if got := string(tx.ReadBucket("rb").Get([]byte("k"))); got != "v" {
			t.Errorf("k = %q after refused writes, want v", got)
		}
		return nil
	})
}
