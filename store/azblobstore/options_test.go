package azblobstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/azblobstore"
)

// TestOpenRefusesNegativeOptions: a negative option is an error from Open
// naming the field, never quietly the default (CONTRIBUTING.md, "Options");
// zero still opens, meaning the named defaults. Open does not contact the
// service here (no CreateContainer).
func TestOpenRefusesNegativeOptions(t *testing.T) {
	ctx := context.Background()
	base := azblobstore.Options{ServiceURL: "http://127.0.0.1:1/" + azblobstore.DevAccountName, Container: "options"}
	for name, set := range map[string]func(*azblobstore.Options){
		"ResolveAttempts": func(o *azblobstore.Options) { o.ResolveAttempts = -1 },
		"ResolveBackoff":  func(o *azblobstore.Options) { o.ResolveBackoff = -time.Millisecond },
	} {
		o := base
		set(&o)
		s, err := azblobstore.Open(ctx, &o)
		if err == nil || !strings.Contains(err.Error(), "Options."+name) {
			t.Errorf("Open with negative %s = %v, %v; want an error naming Options.%s", name, s, err, name)
		}
	}
	if _, err := azblobstore.Open(ctx, &base); err != nil {
		t.Errorf("Open with zero options: %v", err)
	}
}
