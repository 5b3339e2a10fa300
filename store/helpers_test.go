package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/faultstore"
	"github.com/latchkey/latchkey/store/memstore"
)

// smallPages caps every page at limit items and counts List calls, so that
// All must follow Next across many pages.
type smallPages struct {
	store.Store
	limit int
	calls int
}

func (s *smallPages) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	s.calls++
	o := store.ListOptions{Limit: s.limit}
	if opts != nil {
		o.After = opts.After
		if opts.Limit > 0 && opts.Limit < s.limit {
			o.Limit = opts.Limit
		}
	}
	return s.Store.List(ctx, prefix, &o)
}

func fill(t *testing.T, s store.Store, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := s.Put(context.Background(), k, []byte(k), store.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAllPagesThroughEveryKey(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	var want []string
	for i := range 23 {
		k := fmt.Sprintf("p/%02d", i)
		want = append(want, k)
	}
	fill(t, m, want...)
	fill(t, m, "o", "p", "q/1") // outside the prefix
	for _, limit := range []int{1, 2, 3, 5, 22, 23, 24, 1000} {
		s := &smallPages{Store: m, limit: limit}
		var got []string
		for it, err := range store.All(ctx, s, "p/") {
			if err != nil {
				t.Fatalf("limit %d: %v", limit, err)
			}
			e, err := m.Get(ctx, it.Key)
			if err != nil || e.Version != it.Version {
				t.Errorf("limit %d: %s listed at %q, Get says %q (%v)", limit, it.Key, it.Version, e.Version, err)
			}
			got = append(got, it.Key)
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: All = %v, want %v", limit, got, want)
		}
		if pages := (len(want) + limit - 1) / limit; s.calls < pages || s.calls > pages+1 {
			t.Errorf("limit %d: %d List calls for %d keys", limit, s.calls, len(want))
		}
	}
}

func TestAllStopsWhenTheLoopBreaks(t *testing.T) {
	m := memstore.New()
	fill(t, m, "a", "b", "c", "d", "e", "f")
	s := &smallPages{Store: m, limit: 2}
	n := 0
	for range store.All(context.Background(), s, "") {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 || s.calls != 2 {
		t.Errorf("broke after %d items with %d List calls, want 3 items and 2 calls", n, s.calls)
	}
}

func TestAllYieldsTheErrorAndStops(t *testing.T) {
	m := memstore.New()
	fill(t, m, "a", "b", "c", "d", "e")
	fs := faultstore.New(&smallPages{Store: m, limit: 2}, 1)
	var keys []string
	var errs []error
	for it, err := range store.All(context.Background(), fs, "") {
		if err != nil {
			errs = append(errs, err)
			if it != (store.Item{}) {
				t.Errorf("error yielded with item %+v, want the zero Item", it)
			}
			continue
		}
		keys = append(keys, it.Key)
		if len(keys) == 1 {
			fs.FailNext(faultstore.OpList, 1, faultstore.FailBefore) // the second page fails
		}
	}
	if !slices.Equal(keys, []string{"a", "b"}) || len(errs) != 1 || !errors.Is(errs[0], store.ErrTransient) {
		t.Errorf("All yielded %v and errors %v; want a, b then one ErrTransient", keys, errs)
	}
}

func TestStreamHelpersFallBackToGetAndPut(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	v, err := store.PutStream(ctx, m, "k", strings.NewReader("streamed"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutStream(ctx, m, "k", strings.NewReader("again"), store.IfAbsent); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second PutStream IfAbsent: %v, want ErrConflict", err)
	}
	rc, gv, err := store.GetStream(ctx, m, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	if string(b) != "streamed" || gv != v {
		t.Errorf("GetStream = %q@%q, want streamed@%q", b, gv, v)
	}
	if _, _, err := store.GetStream(ctx, m, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetStream of a missing key: %v", err)
	}
	if _, err := store.PutStream(ctx, m, "k2", io.MultiReader(strings.NewReader("x"), errReader{}), store.Unconditional); err == nil {
		t.Error("PutStream with a failing reader succeeded")
	}
	if _, err := m.Get(ctx, "k2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a failed PutStream left k2 behind: %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }
