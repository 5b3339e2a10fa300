package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// The obligations of Store.List.

// listKeys are written in a shuffled order; their byte order differs from
// length order and from case-insensitive order.
var listKeys = []string{
	"B", "a", "a-b", "a/b", "a/b/c", "a/c", "a0", "aa", "ab", "b", "é",
}

// WriteKeys writes every key of keys, in a shuffled order, with the value
// "v:<key>", and returns their versions. Backend tests use it to fill a
// store for listing checks of their own.
func WriteKeys(t *testing.T, ctx context.Context, s store.Store, keys []string) map[string]store.Version {
	t.Helper()
	shuffled := slices.Clone(keys)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	vs := make(map[string]store.Version, len(keys))
	for _, k := range shuffled {
		vs[k] = put(t, ctx, s, k, []byte("v:"+k), store.Unconditional)
	}
	return vs
}

// ListAll pages through prefix with Limit limit and returns every item and
// the number of pages. It fails t unless each page has the shape the
// contract asks for: at most limit items (when limit > 0), all within the
// prefix and strictly ascending past After, none empty but the last, and a
// Next that advances. Backend tests use it for paging checks of their own.
func ListAll(t *testing.T, ctx context.Context, s store.Store, prefix string, limit int) (items []store.Item, pages int) {
	t.Helper()
	opts := &store.ListOptions{Limit: limit}
	for pages = 1; ; pages++ {
		if pages > 10000 {
			t.Fatalf("List(%q, limit %d): more than 10000 pages; Next never empties", prefix, limit)
		}
		page, err := s.List(ctx, prefix, opts)
		if err != nil {
			t.Fatalf("List(%q, %+v): %v", prefix, *opts, err)
		}
		if limit > 0 && len(page.Items) > limit {
			t.Fatalf("List(%q, %+v) returned %d items, more than Limit", prefix, *opts, len(page.Items))
		}
		if page.Next != "" && len(page.Items) == 0 {
			t.Fatalf("List(%q, %+v) returned an empty page with Next %q", prefix, *opts, page.Next)
		}
		checkPage(t, prefix, opts, page)
		items = append(items, page.Items...)
		if page.Next == "" {
			break
		}
		if page.Next <= opts.After {
			t.Fatalf("List(%q, %+v): Next %q does not advance", prefix, *opts, page.Next)
		}
		opts = &store.ListOptions{After: page.Next, Limit: limit}
	}
	return items, pages
}

// listAll is ListAll's items.
func listAll(t *testing.T, ctx context.Context, s store.Store, prefix string, limit int) []store.Item {
	t.Helper()
	items, _ := ListAll(t, ctx, s, prefix, limit)
	return items
}

// checkPage fails the test unless every item of page starts with prefix,
// comes after opts.After and has a version, and the items ascend.
func checkPage(t *testing.T, prefix string, opts *store.ListOptions, page store.Page) {
	t.Helper()
	prev := opts.After
	for _, it := range page.Items {
		if !strings.HasPrefix(it.Key, prefix) {
			t.Fatalf("List(%q, %+v) returned %q, outside the prefix", prefix, *opts, it.Key)
		}
		if it.Key <= prev {
			t.Fatalf("List(%q, %+v) returned %q after %q: not strictly ascending past After", prefix, *opts, it.Key, prev)
		}
		if it.Version == "" {
			t.Fatalf("List(%q, %+v) returned %q without a version", prefix, *opts, it.Key)
		}
		prev = it.Key
	}
}

// Keys returns the keys of items, in order.
func Keys(items []store.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Key
	}
	return out
}

// expected returns the sorted keys of vs that start with prefix and are
// greater than after.
func expected(vs map[string]store.Version, prefix, after string) []string {
	var out []string
	for k := range vs {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix && k > after {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func wantKeys(t *testing.T, what string, got []store.Item, want []string, vs map[string]store.Version) {
	t.Helper()
	if !slices.Equal(Keys(got), want) {
		t.Errorf("%s = %q, want %q", what, Keys(got), want)
		return
	}
	for _, it := range got {
		if it.Version != vs[it.Key] {
			t.Errorf("%s: %q has version %q, want %q", what, it.Key, it.Version, vs[it.Key])
		}
	}
}

var listTests = []subtest{
	{name: "empty store lists nothing", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		page, err := s.List(ctx, "", nil)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(page.Items) != 0 || page.Next != "" {
			t.Errorf("List of an empty store = %+v", page)
		}
	}},
	{name: "keys are in ascending byte order with their versions", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		vs := WriteKeys(t, ctx, s, listKeys)
		page, err := s.List(ctx, "", nil)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if page.Next != "" {
			t.Errorf("List of %d keys with the default limit has Next %q", len(listKeys), page.Next)
		}
		wantKeys(t, `List("")`, page.Items, expected(vs, "", ""), vs)
	}},
	{name: "prefix filters keys", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		vs := WriteKeys(t, ctx, s, listKeys)
		for _, p := range []string{"a", "a/", "a/b", "a/b/", "b", "é", "z", "a/b/c"} {
			page, err := s.List(ctx, p, nil)
			if err != nil {
				t.Fatalf("List(%q): %v", p, err)
			}
			wantKeys(t, fmt.Sprintf("List(%q)", p), page.Items, expected(vs, p, ""), vs)
		}
	}},
	{name: "Limit caps the page and Next continues it", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		vs := WriteKeys(t, ctx, s, listKeys)
		for _, limit := range []int{1, 2, 3, len(listKeys) - 1, len(listKeys), len(listKeys) + 1} {
			got := listAll(t, ctx, s, "", limit)
			wantKeys(t, fmt.Sprintf("paging with Limit %d", limit), got, expected(vs, "", ""), vs)
			got = listAll(t, ctx, s, "a", limit)
			wantKeys(t, fmt.Sprintf("paging prefix %q with Limit %d", "a", limit), got, expected(vs, "a", ""), vs)
		}
	}},
	{name: "After lists keys strictly greater", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		vs := WriteKeys(t, ctx, s, listKeys)
		for _, after := range []string{"a", "a/b", "a/bb", "A", "aa", "b", "é", "\u00ff"} {
			page, err := s.List(ctx, "", &store.ListOptions{After: after})
			if err != nil {
				t.Fatalf("List(After %q): %v", after, err)
			}
			wantKeys(t, fmt.Sprintf("List(After %q)", after), page.Items, expected(vs, "", after), vs)
			page, err = s.List(ctx, "a", &store.ListOptions{After: after})
			if err != nil {
				t.Fatalf("List(%q, After %q): %v", "a", after, err)
			}
			wantKeys(t, fmt.Sprintf("List(%q, After %q)", "a", after), page.Items, expected(vs, "a", after), vs)
		}
	}},
	{name: "Next is empty when the listing is complete", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		WriteKeys(t, ctx, s, []string{"a", "b", "c", "d"})
		page, err := s.List(ctx, "", &store.ListOptions{Limit: 2})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if page.Next == "" {
			t.Fatalf("first page of 2 out of 4 keys has no Next")
		}
		page, err = s.List(ctx, "", &store.ListOptions{Limit: 2, After: page.Next})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(page.Items) != 2 {
			t.Fatalf("second page = %+v, want 2 items", page)
		}
		if page.Next != "" {
			// A backend may not know the listing is complete; then the
			// next page must be empty and complete.
			last, err := s.List(ctx, "", &store.ListOptions{Limit: 2, After: page.Next})
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if len(last.Items) != 0 || last.Next != "" {
				t.Errorf("page after the last key = %+v, want an empty complete page", last)
			}
		}
	}},
	{name: "zero Limit means a page of at least 100", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		var keys []string
		for i := range 101 {
			keys = append(keys, fmt.Sprintf("k/%03d", i))
		}
		vs := WriteKeys(t, ctx, s, keys)
		page, err := s.List(ctx, "k/", &store.ListOptions{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(page.Items) < 100 {
			t.Errorf("List with Limit 0 returned %d of 101 keys, want at least 100", len(page.Items))
		}
		wantKeys(t, "paging with Limit 0", listAll(t, ctx, s, "k/", 0), expected(vs, "k/", ""), vs)
	}},
	{name: "deleted keys are not listed and versions are current", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		vs := WriteKeys(t, ctx, s, listKeys)
		for _, k := range []string{"a/b", "b", "a"} {
			del(t, ctx, s, k, store.Unconditional)
			delete(vs, k)
		}
		vs["aa"] = put(t, ctx, s, "aa", []byte("rewritten"), store.Unconditional)
		wantKeys(t, "List after deletes", listAll(t, ctx, s, "", 3), expected(vs, "", ""), vs)
	}},
	{name: "keys not written while paging appear exactly once, in order", run: testListChurn},
	{name: "invalid prefix returns ErrInvalidKey", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		for _, p := range []string{"/", "/a", "a//", "a//b", "..", "a/../", "a\x00", "\xff"} {
			_, err := s.List(ctx, p, nil)
			wantErr(t, fmt.Sprintf("List(%q)", p), err, store.ErrInvalidKey)
		}
	}},
}

// testListChurn pages through stable keys while keys between them are
// created and deleted: by a concurrent writer, and by the lister itself,
// which deletes the key each page ended on before asking for the next. A
// listing is not a snapshot, but every key that exists throughout must
// appear once, in order: paging resumes after a key, even a deleted one,
// not at a position.
func testListChurn(t *testing.T, h Harness) {
	ctx, s := h.open(t)
	stable := map[string]bool{}
	var all []string
	for i := range 30 {
		k := fmt.Sprintf("s/%03d", i*10)
		stable[k] = true
		all = append(all, k)
		for j := 1; j <= 3; j++ {
			all = append(all, fmt.Sprintf("s/%03d", i*10+j))
		}
	}
	WriteKeys(t, ctx, s, all)
	stop, err := startChurn(ctx, s, stable)
	if err != nil {
		t.Fatalf("churning writer: %v", err)
	}
	var rounds [][]store.Item
	for range h.scaled(5, 2) {
		rounds = append(rounds, listDeletingResumeKeys(t, ctx, s, "s/", 7, stable))
	}
	writes, err := stop()
	if err != nil {
		t.Fatalf("churning writer: %v", err)
	}
	t.Logf("%d writes between the stable keys while listing", writes)
	for r, items := range rounds {
		checkChurnedListing(t, r, items, stable)
	}
}

// startChurn starts a writer that creates and deletes random keys s/000 to
// s/299 other than the stable ones, and returns once it has written 20
// times. stop ends it and returns its count of writes and its error.
func startChurn(ctx context.Context, s store.Store, stable map[string]bool) (stop func() (int, error), err error) {
	done := make(chan struct{})
	churned := make(chan error, 1)
	writes := 0 // read after churned
	warm := make(chan struct{})
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-done:
				churned <- nil
				return
			default:
			}
			k := fmt.Sprintf("s/%03d", rng.IntN(300))
			if stable[k] {
				continue // never touch a stable key
			}
			var err error
			if rng.IntN(2) == 0 {
				_, err = s.Put(ctx, k, []byte("churn"), store.Unconditional)
			} else {
				err = s.Delete(ctx, k, store.Unconditional)
			}
			if err != nil {
				churned <- err
				return
			}
			writes++
			if writes == 20 {
				close(warm)
			}
		}
	}()
	select { // let the caller list once the writer is running
	case <-warm:
	case err := <-churned:
		return nil, err
	}
	return func() (int, error) {
		close(done)
		err := <-churned
		return writes, err
	}, nil
}

// checkChurnedListing checks one listing made during churn: ascending
// order, every stable key exactly once, no key twice.
func checkChurnedListing(t *testing.T, round int, items []store.Item, stable map[string]bool) {
	t.Helper()
	if !slices.IsSortedFunc(items, func(a, b store.Item) int { return strings.Compare(a.Key, b.Key) }) {
		t.Errorf("round %d: listing not in ascending order: %q", round, Keys(items))
	}
	count := map[string]int{}
	for _, it := range items {
		count[it.Key]++
	}
	for k := range stable {
		if count[k] != 1 {
			t.Errorf("round %d: stable key %s listed %d times", round, k, count[k])
		}
	}
	for k, n := range count {
		if n > 1 {
			t.Errorf("round %d: %s listed %d times", round, k, n)
		}
	}
}

// listDeletingResumeKeys pages through prefix, deleting the key each page
// ended on (unless it is stable) before it asks for the next page.
func listDeletingResumeKeys(t *testing.T, ctx context.Context, s store.Store, prefix string, limit int, stable map[string]bool) []store.Item {
	t.Helper()
	var items []store.Item
	opts := &store.ListOptions{Limit: limit}
	for range 10000 {
		page, err := s.List(ctx, prefix, opts)
		if err != nil {
			t.Fatalf("List(%q, %+v): %v", prefix, *opts, err)
		}
		checkPage(t, prefix, opts, page)
		items = append(items, page.Items...)
		if page.Next == "" {
			return items
		}
		if !stable[page.Next] {
			del(t, ctx, s, page.Next, store.Unconditional)
		}
		opts = &store.ListOptions{After: page.Next, Limit: limit}
	}
	t.Fatalf("List(%q): more than 10000 pages", prefix)
	return nil
}
