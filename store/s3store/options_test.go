package s3store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/s3store"
)

// TestOpenRefusesNegativeOptions: a negative option is an error from Open
// naming the field, never quietly the default (CONTRIBUTING.md, "Options");
// zero still opens, meaning the named defaults.
func TestOpenRefusesNegativeOptions(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]s3store.Options{
		"ResolveAttempts": {ResolveAttempts: -1},
		"ResolveBackoff":  {ResolveBackoff: -time.Millisecond},
	} {
		o.Region = "us-east-1"
		s, err := s3store.Open(ctx, "bucket", "", &o)
		if err == nil || !strings.Contains(err.Error(), "Options."+name) {
			t.Errorf("Open with negative %s = %v, %v; want an error naming Options.%s", name, s, err, name)
		}
	}
	if _, err := s3store.Open(ctx, "bucket", "", &s3store.Options{Region: "us-east-1"}); err != nil {
		t.Errorf("Open with zero options: %v", err)
	}
}
