package engine

import (
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
