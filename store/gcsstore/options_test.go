package gcsstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/gcsstore"
)

// A negative option is refused by Open, naming the field; zero options
// open (nothing is contacted).
func TestOpenRefusesNegativeOptions(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]gcsstore.Options{
		"ResolveAttempts": {Bucket: "b", Endpoint: "http://127.0.0.1:1/storage/v1/", ResolveAttempts: -1},
		"ResolveBackoff":  {Bucket: "b", Endpoint: "http://127.0.0.1:1/storage/v1/", ResolveBackoff: -time.Millisecond},
	} {
		s, err := gcsstore.Open(ctx, &o)
		if err == nil || !strings.Contains(err.Error(), "Options."+name) {
			t.Errorf("Open with negative %s = %v, %v; want an error naming Options.%s", name, s, err, name)
		}
	}
	o := gcsstore.Options{Bucket: "b", Endpoint: "http://127.0.0.1:1/storage/v1/"}
	s, err := gcsstore.Open(ctx, &o)
	if err != nil {
		t.Fatalf("Open with zero options: %v", err)
	}
	s.Close()
}
