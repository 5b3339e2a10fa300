package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// The single-key obligations of Store.Get, Store.Put and Store.Delete.

var getTests = []subtest{
	{name: "deleted key returns ErrNotFound", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		del(t, ctx, s, "k", store.Unconditional)
		wantMissing(t, ctx, s, "k")
	}},
}

var putTests = []subtest{
	{name: "unconditional put overwrites an existing key", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v1 := put(t, ctx, s, "k", []byte("one"), store.Unconditional)
		v2 := put(t, ctx, s, "k", []byte("two"), store.Unconditional)
		if v1 == v2 {
			t.Errorf("overwrite returned the old version %q", v1)
		}
		wantEntry(t, ctx, s, "k", []byte("two"), v2)
	}},
	{name: "keys are independent", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		va := put(t, ctx, s, "a", []byte("A"), store.Unconditional)
		put(t, ctx, s, "a/b", []byte("AB"), store.Unconditional)
		vc := put(t, ctx, s, "ab", []byte("AB2"), store.Unconditional)
		del(t, ctx, s, "a/b", store.Unconditional)
		wantEntry(t, ctx, s, "a", []byte("A"), va)
		wantEntry(t, ctx, s, "ab", []byte("AB2"), vc)
		wantMissing(t, ctx, s, "a/b")
	}},
	{name: "versions differ after every write", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		caps := s.Capabilities()
		seen := map[store.Version]string{}
		note := func(v store.Version, what string) {
			t.Helper()
			if prev, dup := seen[v]; dup {
				t.Errorf("%s returned version %q, already returned by %s", what, v, prev)
			}
			seen[v] = what
		}
		var cur store.Version
		for i := range 10 {
			cond := store.Unconditional
			if caps.CompareAndSwap && i%2 == 1 {
				cond = store.IfMatch(cur)
			}
			what := fmt.Sprintf("write %d (%s)", i, cond)
			cur = put(t, ctx, s, "k", fmt.Appendf(nil, "v%d", i), cond)
			note(cur, what)
			if !caps.UniqueVersions {
				continue // a version may be a digest of the value
			}
			// Same value again must still yield a fresh version.
			cur = put(t, ctx, s, "k", fmt.Appendf(nil, "v%d", i), store.Unconditional)
			note(cur, what+" repeated")
		}
		// Another key's versions may coincide with these (versions are
		// per key), so only this key's are compared.
	}},
	{name: "failed writes change nothing", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		caps := s.Capabilities()
		first := []byte("keep") // the same bytes, when versions name writes
		if !caps.UniqueVersions {
			first = []byte("kept before")
		}
		v := put(t, ctx, s, "k", first, store.Unconditional)
		stale := v
		v = put(t, ctx, s, "k", []byte("keep"), store.Unconditional)
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				t.Fatalf("%s succeeded, want a failure", what)
			}
			wantEntry(t, ctx, s, "k", []byte("keep"), v)
			wantMissing(t, ctx, s, "absent")
			page, lerr := s.List(ctx, "", nil)
			if lerr != nil {
				t.Fatalf("List: %v", lerr)
			}
			if len(page.Items) != 1 || page.Items[0].Key != "k" || page.Items[0].Version != v {
				t.Errorf("after failed %s, List = %+v, want only k@%s", what, page.Items, v)
			}
		}
		if caps.CreateIfAbsent {
			_, err := s.Put(ctx, "k", []byte("lost"), store.IfAbsent)
			check("PutIfAbsent on existing key", err)
		}
		if caps.CompareAndSwap {
			_, err := s.Put(ctx, "k", []byte("lost"), store.IfMatch(stale))
			check("PutIfMatch stale", err)
			_, err = s.Put(ctx, "absent", []byte("lost"), store.IfMatch(v))
			check("PutIfMatch on missing key", err)
		}
		if caps.CompareAndDelete {
			check("DeleteIfMatch stale", s.Delete(ctx, "k", store.IfMatch(stale)))
			check("DeleteIfMatch on missing key", s.Delete(ctx, "absent", store.IfMatch(v)))
		}
		check("DeleteIfAbsent", s.Delete(ctx, "k", store.IfAbsent))
		_, err := s.Put(ctx, "bad//key", []byte("lost"), store.Unconditional)
		check("Put with an invalid key", err)
	}},
}

var putIfAbsentTests = []subtest{
	{name: "missing key is created", need: hasCreate, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v := put(t, ctx, s, "k", []byte("new"), store.IfAbsent)
		wantEntry(t, ctx, s, "k", []byte("new"), v)
	}},
	{name: "deleted key can be created again", need: hasCreate, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v1 := put(t, ctx, s, "k", []byte("first"), store.IfAbsent)
		del(t, ctx, s, "k", store.Unconditional)
		v2 := put(t, ctx, s, "k", []byte("second"), store.IfAbsent)
		if v1 == v2 {
			t.Errorf("re-created key got the version %q it had before the delete", v1)
		}
		wantEntry(t, ctx, s, "k", []byte("second"), v2)
	}},
}

var putIfMatchTests = []subtest{
	{name: "deleted key returns ErrConflict", need: hasCAS, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v := put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		del(t, ctx, s, "k", store.Unconditional)
		_, err := s.Put(ctx, "k", []byte("back"), store.IfMatch(v))
		wantErr(t, "PutIfMatch after Delete", err, store.ErrConflict)
		wantMissing(t, ctx, s, "k")
	}},
	{name: "empty version returns ErrConflict", need: hasCAS, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v := put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		_, err := s.Put(ctx, "k", []byte("y"), store.IfMatch(""))
		wantErr(t, `PutIfMatch("") on an existing key`, err, store.ErrConflict)
		_, err = s.Put(ctx, "absent", []byte("y"), store.IfMatch(""))
		wantErr(t, `PutIfMatch("") on a missing key`, err, store.ErrConflict)
		wantEntry(t, ctx, s, "k", []byte("x"), v)
		wantMissing(t, ctx, s, "absent")
	}},
	{name: "version of another key returns ErrConflict", need: hasCAS, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		va := put(t, ctx, s, "a", []byte("a"), store.Unconditional)
		vb := put(t, ctx, s, "b", []byte("b"), store.Unconditional)
		if va == vb {
			return // per-key versions may coincide; nothing to check
		}
		_, err := s.Put(ctx, "a", []byte("x"), store.IfMatch(vb))
		wantErr(t, "PutIfMatch with another key's version", err, store.ErrConflict)
		wantEntry(t, ctx, s, "a", []byte("a"), va)
	}},
}

var deleteTests = []subtest{
	{name: "unconditional delete removes the key", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		del(t, ctx, s, "k", store.Unconditional)
		wantMissing(t, ctx, s, "k")
	}},
	{name: "unconditional delete of missing key succeeds", run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		if err := s.Delete(ctx, "never", store.Unconditional); err != nil {
			t.Errorf("Delete of a key never written: %v", err)
		}
		put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		del(t, ctx, s, "k", store.Unconditional)
		if err := s.Delete(ctx, "k", store.Unconditional); err != nil {
			t.Errorf("second Delete: %v", err)
		}
	}},
}

var deleteIfMatchTests = []subtest{
	{name: "empty version returns ErrConflict", need: hasCAD, run: func(t *testing.T, h Harness) {
		ctx, s := h.open(t)
		v := put(t, ctx, s, "k", []byte("x"), store.Unconditional)
		wantErr(t, `DeleteIfMatch("")`, s.Delete(ctx, "k", store.IfMatch("")), store.ErrConflict)
		wantEntry(t, ctx, s, "k", []byte("x"), v)
	}},
}

var versionTests = []subtest{
	{name: "a key deleted and created again never matches an older version", need: hasUniqueVersions, run: testNoABA},
}

// hasUniqueVersions: the store declares Capabilities.UniqueVersions, so a
// version names one write, not one content.
func hasUniqueVersions(s store.Store) bool { return s.Capabilities().UniqueVersions }

// testNoABA holds versions from several generations of one key (each
// generation created, rewritten and deleted, with the same bytes every
// generation, as a lease record would be) and checks that none of them
// matches the key as it is now, created again with the same bytes.
func testNoABA(t *testing.T, h Harness) {
	ctx, s := h.open(t)
	caps := s.Capabilities()
	const gens = 4
	values := [][]byte{[]byte("A"), []byte("B"), []byte("A")}
	var old []store.Version
	for range gens {
		cond := store.Unconditional
		if caps.CreateIfAbsent {
			cond = store.IfAbsent
		}
		v := put(t, ctx, s, "k", values[0], cond)
		old = append(old, v)
		for _, val := range values[1:] {
			c := store.Unconditional
			if caps.CompareAndSwap {
				c = store.IfMatch(v)
			}
			v = put(t, ctx, s, "k", val, c)
			old = append(old, v)
		}
		c := store.Unconditional
		if caps.CompareAndDelete {
			c = store.IfMatch(v)
		}
		del(t, ctx, s, "k", c)
	}
	seen := map[store.Version]int{}
	for i, v := range old {
		if j, dup := seen[v]; dup {
			t.Errorf("writes %d and %d of one key both returned version %q", j, i, v)
		}
		seen[v] = i
	}
	cur := put(t, ctx, s, "k", values[0], store.Unconditional)
	if j, dup := seen[cur]; dup {
		t.Errorf("the key created again got version %q, which write %d had before a Delete", cur, j)
	}
	for i, v := range old {
		if caps.CompareAndSwap {
			_, err := s.Put(ctx, "k", []byte("aba"), store.IfMatch(v))
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("PutIfMatch with version %q of write %d, from an earlier generation: err = %v, want ErrConflict", v, i, err)
			}
		}
		if caps.CompareAndDelete {
			err := s.Delete(ctx, "k", store.IfMatch(v))
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("DeleteIfMatch with version %q of write %d, from an earlier generation: err = %v, want ErrConflict", v, i, err)
			}
		}
	}
	wantEntry(t, ctx, s, "k", values[0], cur)
}
