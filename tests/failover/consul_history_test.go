//go:build linux

package failover

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// TestFencedRecorderSeesUnacknowledgedWrites: a fenced write with an older
// token that applied although its caller never learned it (written here
// past the recorder) is in the rebuilt history as soon as any client
// reads it, and CheckFencedWrites catches the inversion.
func TestFencedRecorderSeesUnacknowledgedWrites(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New()
	rec := newFencedRecorder("fenced")
	s := rec.wrap(inner)
	value := func(tok int) []byte { return fmt.Appendf(nil, "latchkey-fenced %d\nc0 t%d w0", tok, tok) }

	v1, err := s.Put(ctx, "fenced", value(5), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Put(ctx, "fenced", value(3), store.IfMatch(v1)); err != nil { // its answer lost
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "fenced"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "other", value(1), store.Unconditional); err != nil { // not recorded
		t.Fatal(err)
	}
	ws, err := rec.history("fenced")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].Token != 5 || ws[1].Token != 3 {
		t.Fatalf("history %+v, want tokens 5 then 3", ws)
	}
	if vs := CheckFencedWrites(ws); len(vs) != 1 || vs[0].Kind != "inversion" {
		t.Fatalf("violations %v, want one inversion", vs)
	}
	if ws, _ := rec.history("other"); len(ws) != 0 {
		t.Fatalf("recorded a key that does not end in fenced: %+v", ws)
	}
}

// TestFencedRecorderRefusesTwoValuesAtOneVersion: a store that reports two
// values at one version breaks the history's premise; the recorder says
// so rather than pick one.
func TestFencedRecorderRefusesTwoValuesAtOneVersion(t *testing.T) {
	rec := newFencedRecorder("fenced")
	rec.saw("fenced", store.Entry{Value: []byte("latchkey-fenced 1\nc0 t1 w0"), Version: "7"})
	rec.saw("fenced", store.Entry{Value: []byte("latchkey-fenced 2\nc1 t2 w0"), Version: "7"})
	if _, err := rec.history("fenced"); err == nil || !strings.Contains(err.Error(), "version 7") {
		t.Fatalf("history: %v, want an error naming version 7", err)
	}
}
