package publish_test

import (
	"context"
	"testing"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store/memstore"
)

// Negative options are an error, as everywhere in latchkey (zero means
// the default), and nothing is written or deleted.
func TestNegativeOptionsRefused(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	old := publishFiles(t, ctx, s, "neg", map[string]string{"a": "old"})
	publishFiles(t, ctx, s, "neg", map[string]string{"a": "new"})
	before := keysUnder(t, ctx, s, "neg")
	for _, o := range []publish.Options{{MaxTransient: -1}, {MaxAge: -time.Second}} {
		if w, err := publish.Begin(ctx, s, "neg", &o); err == nil {
			w.Abort(ctx)
			t.Errorf("Begin(%+v) succeeded; want an error", o)
		}
	}
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	if res, err := publish.GC(ctx, s, "neg", &publish.GCOptions{Grace: -time.Hour, Now: later}); err == nil {
		t.Errorf("GC with a negative Grace succeeded: deleted %v; want an error", res.Deleted)
	}
	if after := keysUnder(t, ctx, s, "neg"); len(after) != len(before) {
		t.Errorf("keys %q after refused options; want %q (generation %s kept)", after, before, old.Generation)
	}
}
