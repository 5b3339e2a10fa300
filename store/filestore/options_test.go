package filestore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/filestore"
)

// TestOpenRefusesNegativeOptions: a negative option is an error from Open
// naming the field, never quietly the default (CONTRIBUTING.md, "Options");
// zero still opens, meaning the named defaults.
func TestOpenRefusesNegativeOptions(t *testing.T) {
	for name, o := range map[string]filestore.Options{
		"Stripes":      {Stripes: -1},
		"PollInterval": {PollInterval: -time.Millisecond},
	} {
		s, err := filestore.Open(t.TempDir(), &o)
		if err == nil || !strings.Contains(err.Error(), "Options."+name) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open with negative %s = %v; want an error naming Options.%s", name, err, name)
		}
	}
	s, err := filestore.Open(t.TempDir(), &filestore.Options{})
	if err != nil {
		t.Fatalf("Open with zero options: %v", err)
	}
	s.Close()
}
