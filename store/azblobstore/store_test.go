package azblobstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/azblobstore"
	"github.com/latchkey/latchkey/store/storetest"
)

// TestBlobIsTheValue: the blob holds exactly the value, with the write's
// nonce in metadata, no header added. (That identical bytes rewritten get
// a new version, per write, is storetest's: Azure ETags are not content
// hashes.)
func TestBlobIsTheValue(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, azurite(t))
	if _, err := s.Put(ctx, "k", []byte("same"), store.IfAbsent); err != nil {
		t.Fatal(err)
	}
	r, err := s.Container().NewBlobClient("k").DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if string(raw) != "same" || len(r.Metadata) != 1 {
		t.Fatalf("raw blob %q, metadata %v", raw, r.Metadata)
	}
}

// TestConditionCodes: Azurite answers a lost create with 409
// BlobAlreadyExists and a lost If-Match with 412 ConditionNotMet; both
// surface as ErrConflict with the status kept.
func TestConditionCodes(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, azurite(t))
	v, err := s.Put(ctx, "k", []byte("a"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		err    error
		status int
	}{
		{"create over existing", func() error { _, err := s.Put(ctx, "k", nil, store.IfAbsent); return err }(), 409},
		{"If-Match stale", func() error { _, err := s.Put(ctx, "k", nil, store.IfMatch(`"0x1"`)); return err }(), 412},
		{"If-Match missing", func() error { _, err := s.Put(ctx, "nope", nil, store.IfMatch(v)); return err }(), 412},
		{"delete If-Match missing", s.Delete(ctx, "nope", store.IfMatch(v)), 412},
	} {
		var oe *store.OpError
		if !errors.Is(c.err, store.ErrConflict) || !errors.As(c.err, &oe) || oe.Status != c.status {
			t.Errorf("%s: %v, want ErrConflict with status %d", c.name, c.err, c.status)
		}
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a missing key: %v", err)
	}
}

// TestBlobNameEscapes: Azure turns '\' in a blob name into '/', so keys
// with '\' (and '%', the escape) are stored under escaped names, listed
// back as keys, and do not collide with their '/' twins.
func TestBlobNameEscapes(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, azurite(t))
	keys := []string{`back\slash`, "back/slash", "per%5Ccent", "per%cent"}
	for _, k := range keys {
		if _, err := s.Put(ctx, k, []byte(k), store.IfAbsent); err != nil {
			t.Fatalf("Put %q: %v", k, err)
		}
	}
	for _, k := range keys {
		if e, err := s.Get(ctx, k); err != nil || string(e.Value) != k {
			t.Fatalf("Get %q = %q, %v", k, e.Value, err)
		}
	}
	got := map[string]bool{}
	for it, err := range store.All(ctx, s, "") {
		if err != nil {
			t.Fatal(err)
		}
		got[it.Key] = true
	}
	if len(got) != len(keys) {
		t.Fatalf("listed %v, want %q", got, keys)
	}
	if _, err := s.Container().NewBlobClient(`back%5Cslash`).GetProperties(ctx, nil); err != nil {
		t.Fatalf("escaped blob name not found: %v", err)
	}
}

// TestListPaging pages through 250 keys with Limit 100, once from the
// store that remembers Azure's markers and once from a second store that
// has none (it must skip to After itself), with prefixes.
func TestListPaging(t *testing.T) {
	ctx := testCtx(t)
	u := azurite(t)
	s := open(t, u)
	var want []string
	for i := range 250 {
		want = append(want, fmt.Sprintf("l/%03d", i))
	}
	storetest.WriteKeys(t, ctx, s, append(want, "m"))
	fresh := func() store.Store {
		s2, err := azblobstore.Open(ctx, &azblobstore.Options{ServiceURL: u, Container: s.Container().URL()[len(u)+1:],
			AccountName: azblobstore.DevAccountName, AccountKey: azblobstore.DevAccountKey})
		if err != nil {
			t.Fatal(err)
		}
		return s2
	}
	for name, lister := range map[string]store.Store{"markers": s, "no markers": freshLists{s, fresh}} {
		items, pages := storetest.ListAll(t, ctx, lister, "l/", 100)
		if got := storetest.Keys(items); fmt.Sprint(got) != fmt.Sprint(want) || pages != 3 {
			t.Fatalf("%s: %d pages, %d keys; first %v", name, pages, len(got), got[:min(3, len(got))])
		}
	}
	page, err := fresh().List(ctx, "l/24", &store.ListOptions{After: "l/245"})
	if err != nil || len(page.Items) != 4 || page.Items[0].Key != "l/246" || page.Next != "" {
		t.Fatalf("prefix+After: %v next %q, %v", page.Items, page.Next, err)
	}
}

// freshLists lists each page from a new store, which remembers no
// markers: it must skip to After itself.
type freshLists struct {
	store.Store
	fresh func() store.Store
}

func (f freshLists) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	return f.fresh().List(ctx, prefix, opts)
}

// TestPutStreamBlocks: a value longer than one block is staged and
// committed under the condition; a reader that fails midway leaves the
// key as it was.
func TestPutStreamBlocks(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, azurite(t))
	data := bytes.Repeat([]byte("0123456789abcdef"), (9<<20)/16+7) // 9 MiB + 112 bytes: 3 blocks
	v, err := s.PutStream(ctx, "big", bytes.NewReader(data), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutStream(ctx, "big", bytes.NewReader(data), store.IfAbsent); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second streamed create: %v, want ErrConflict", err)
	}
	rc, gv, err := s.GetStream(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || gv != v || !bytes.Equal(got, data) {
		t.Fatalf("GetStream: version %s want %s, %d bytes (equal %v), %v", gv, v, len(got), bytes.Equal(got, data), err)
	}
	bad := io.MultiReader(bytes.NewReader(data[:6<<20]), iotest.ErrReader(errors.New("disk on fire")))
	if _, err := s.PutStream(ctx, "big", bad, store.IfMatch(v)); err == nil {
		t.Fatal("PutStream from a failing reader succeeded")
	}
	if e, err := s.Get(ctx, "big"); err != nil || e.Version != v || !bytes.Equal(e.Value, data) {
		t.Fatalf("after a failed PutStream: version %s want %s, %v", e.Version, v, err)
	}
	v2, err := s.PutStream(ctx, "big", bytes.NewReader(data[:5<<20]), store.IfMatch(v))
	if err != nil || v2 == v {
		t.Fatalf("streamed CAS: %s, %v", v2, err)
	}
}

// faultTransport loses the response of the first n PUTs that carry an
// If-Match or If-None-Match header (after the server applied them), or,
// with before set, fails them before sending.
type faultTransport struct {
	n      atomic.Int32
	before bool
}

func (f *faultTransport) Do(req *http.Request) (*http.Response, error) {
	conditional := req.Header.Get("If-Match") != "" || req.Header.Get("If-None-Match") != ""
	if req.Method == http.MethodPut && conditional && f.n.Add(-1) >= 0 {
		if f.before {
			return nil, errors.New("injected: connection reset before send")
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return nil, errors.New("injected: connection reset after the server answered")
	}
	return http.DefaultClient.Do(req)
}

// TestAmbiguousWritesResolve: a conditional write whose response is lost
// is resolved through the nonce as won (not as a conflict with itself); a
// write that never left is resent. Another writer's blob in between makes
// the outcome ErrUnknownOutcome, never ErrConflict.
func TestAmbiguousWritesResolve(t *testing.T) {
	ctx := testCtx(t)
	u := azurite(t)
	c := newContainer(t, u)
	for _, before := range []bool{false, true} {
		ft := &faultTransport{}
		o := options(u, c, testutil.RandomName("amb-"))
		o.Transport = ft
		s, err := azblobstore.Open(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		ft.n.Store(1)
		v, err := s.Put(ctx, "k", []byte("one"), store.IfAbsent)
		if err != nil {
			t.Fatalf("before=%v: create with a lost response: %v", before, err)
		}
		if ft.n.Load() >= 1 {
			t.Fatal("the fault was not injected")
		}
		ft.n.Store(1)
		v2, err := s.Put(ctx, "k", []byte("two"), store.IfMatch(v))
		if err != nil || v2 == v {
			t.Fatalf("before=%v: CAS with a lost response: %s, %v", before, v2, err)
		}
		if e, err := s.Get(ctx, "k"); err != nil || e.Version != v2 || string(e.Value) != "two" {
			t.Fatalf("before=%v: Get = %+v, %v", before, e, err)
		}
		ft.n.Store(1)
		if err := s.Delete(ctx, "k", store.IfMatch(v2)); err != nil && !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("before=%v: conditional delete with a lost response: %v", before, err)
		}
		if _, err := s.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("before=%v: after delete: %v", before, err)
		}
	}
	// Lost response, and the resolution finds another writer's blob.
	ft := &faultTransport{}
	o := options(u, c, testutil.RandomName("amb-"))
	o.Transport = ft
	o.ResolveAttempts = 1
	s, _ := azblobstore.Open(ctx, o)
	other, _ := azblobstore.Open(ctx, &azblobstore.Options{ServiceURL: u, Container: c, Prefix: s.Prefix(),
		AccountName: azblobstore.DevAccountName, AccountKey: azblobstore.DevAccountKey})
	v, err := s.Put(ctx, "k", []byte("one"), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	interfere := &interferingTransport{faultTransport: ft, then: func() { _, _ = other.Put(ctx, "k", []byte("theirs"), store.Unconditional) }}
	o.Transport = interfere
	s, _ = azblobstore.Open(ctx, o)
	ft.n.Store(1)
	if _, err := s.Put(ctx, "k", []byte("mine"), store.IfMatch(v)); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("lost response, then another writer: %v, want ErrUnknownOutcome", err)
	}
}

// interferingTransport runs then right after the first faulted request.
type interferingTransport struct {
	*faultTransport
	then func()
	done atomic.Bool
}

func (it *interferingTransport) Do(req *http.Request) (*http.Response, error) {
	resp, err := it.faultTransport.Do(req)
	if err != nil && !it.done.Swap(true) {
		it.then()
	}
	return resp, err
}

// TestClosed: calls after Close fail with ErrClosed, without a server.
func TestClosed(t *testing.T) {
	s, err := azblobstore.Open(context.Background(), options("http://127.0.0.1:1/devstoreaccount1", "c-closed", "p"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Get(context.Background(), "k"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

// TestOpenRejects: bad options fail Open with a clear error.
func TestOpenRejects(t *testing.T) {
	for _, o := range []*azblobstore.Options{
		nil,
		{ServiceURL: "http://127.0.0.1:1/a", Container: "UPPER"},
		{ServiceURL: "http://127.0.0.1:1/a", Container: "ab"},
		{ServiceURL: "http://127.0.0.1:1/a", Container: "a--b"},
		{ServiceURL: "ftp://x/a", Container: "abc"},
		{Container: "abc"},
		{ServiceURL: "http://127.0.0.1:1/a", Container: "abc", Prefix: "a//b"},
		{ServiceURL: "http://127.0.0.1:1/a", Container: "abc", AccountKey: "a2V5"},
		{ConnectionString: "UseDevelopmentStorage=true", Container: "abc", AccountKey: "a2V5"},
	} {
		if _, err := azblobstore.Open(context.Background(), o); err == nil {
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}

// TestCreateContainer: Open with CreateContainer creates a missing
// container and accepts an existing one.
func TestCreateContainer(t *testing.T) {
	ctx := testCtx(t)
	u := azurite(t)
	o := options(u, testutil.RandomName("lk-create-"), "p")
	o.CreateContainer = true
	for i := 0; i < 2; i++ {
		s, err := azblobstore.Open(ctx, o)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if i == 0 {
			t.Cleanup(func() { _, _ = s.Container().Delete(ctx, nil) })
		}
		if _, err := s.Put(ctx, fmt.Sprint(i), nil, store.IfAbsent); err != nil {
			t.Fatal(err)
		}
	}
}
