package gcsstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/gcsstore"
)

func TestPrefixScopesKeys(t *testing.T) {
	e := startedEmulator(t)
	bucket := e.bucket(t)
	open := func(prefix string) *gcsstore.Store {
		s, err := gcsstore.Open(t.Context(), &gcsstore.Options{Bucket: bucket, Prefix: prefix, Endpoint: e.endpoint})
		testutil.Opened(t, s, err)
		return s
	}
	a, b := open("tenant-a"), open("/tenant-b/")
	if a.Prefix() != "tenant-a/" || b.Prefix() != "tenant-b/" {
		t.Fatalf("prefixes %q %q", a.Prefix(), b.Prefix())
	}
	ctx := t.Context()
	if _, err := a.Put(ctx, "k", []byte("a"), store.IfAbsent); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", []byte("b"), store.IfAbsent); err != nil {
		t.Fatalf("same key under another prefix: %v", err)
	}
	meta := e.metadata(t, bucket, "tenant-a/k")
	if n := meta["latchkey-nonce"]; len(n) != 32 {
		t.Fatalf("nonce metadata = %q, want 32 hex digits", n)
	}
	p, err := a.List(ctx, "", nil)
	if err != nil || len(p.Items) != 1 || p.Items[0].Key != "k" {
		t.Fatalf("List under tenant-a = %+v, %v", p, err)
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	for _, o := range []*gcsstore.Options{nil, {}, {Bucket: "b", Prefix: "bad\x00prefix"}} {
		if s, err := gcsstore.Open(context.Background(), o); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", o)
		} else if !strings.HasPrefix(err.Error(), "gcsstore: open: ") {
			t.Errorf("Open(%+v): error %q does not name the package", o, err)
		}
	}
}

// lossyTransport forwards requests to the emulator and, for the first
// drop uploads, throws the response away after the server has handled
// the request: the client sees a reset, as after a lost connection.
type lossyTransport struct {
	drop     atomic.Int32
	uploads  atomic.Int32
	forward  bool // false: drop the request before it is sent
	onUpload func()
}

func (lt *lossyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/upload/") {
		lt.uploads.Add(1)
		if lt.drop.Add(-1) >= 0 {
			if !lt.forward {
				if r.Body != nil {
					r.Body.Close()
				}
				return nil, io.ErrUnexpectedEOF
			}
			resp, err := http.DefaultTransport.RoundTrip(r)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if lt.onUpload != nil {
				lt.onUpload()
			}
			return nil, errors.New("connection reset by peer (injected after the server answered)")
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (e emulator) lossy(t *testing.T, lt *lossyTransport) *gcsstore.Store {
	s, err := gcsstore.Open(t.Context(), &gcsstore.Options{
		Bucket: e.bucket(t), Endpoint: e.endpoint, NoCompareAndDelete: true,
		HTTPClient:     &http.Client{Transport: lt},
		ResolveBackoff: 1,
	})
	testutil.Opened(t, s, err)
	return s
}

// A conditional write applied by the server whose response was lost is a
// win, found by its nonce: neither a false conflict (a client retry
// would have answered 412) nor an unknown outcome. A request that never
// arrived is resent when it is a CAS; a create is not (its first copy
// might still land after a delete), so it stays unknown.
func TestLostResponseWriteResolvesToWin(t *testing.T) {
	e := startedEmulator(t)
	for _, forward := range []bool{true, false} {
		lt := &lossyTransport{forward: forward}
		s := e.lossy(t, lt)
		ctx := t.Context()
		if !forward {
			lt.drop.Store(1)
			if _, err := s.Put(ctx, "k0", []byte("zero"), store.IfAbsent); !errors.Is(err, store.ErrUnknownOutcome) {
				t.Fatalf("create whose request was lost: %v, want ErrUnknownOutcome", err)
			}
			if _, err := s.Get(ctx, "k0"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the lost create was resent: Get = %v", err)
			}
		}
		if forward {
			lt.drop.Store(1)
		}
		v1, err := s.Put(ctx, "k", []byte("one"), store.IfAbsent)
		if err != nil {
			t.Fatalf("forward=%v: create with a lost response: %v", forward, err)
		}
		lt.drop.Store(1)
		v2, err := s.Put(ctx, "k", []byte("two"), store.IfMatch(v1))
		if err != nil {
			t.Fatalf("forward=%v: CAS with a lost response: %v", forward, err)
		}
		got, err := s.Get(ctx, "k")
		if err != nil || got.Version != v2 || string(got.Value) != "two" {
			t.Fatalf("forward=%v: Get = %+v, %v; want \"two\" at %s", forward, got, err, v2)
		}
		// A lost answer is resolved by reading the nonce (no resend); a
		// CAS that never arrived is resent once, a create is not.
		want := int32(2)
		if !forward {
			want = 1 + 1 + 2 // lost create, create, CAS and its resend
		}
		if n := lt.uploads.Load(); n != want {
			t.Fatalf("forward=%v: %d uploads, want %d", forward, n, want)
		}
	}
}

// When the lost write landed and someone else overwrote it before the
// writer could look, the outcome is unknown, never a conflict.
func TestLostResponseThenOverwrittenIsUnknown(t *testing.T) {
	e := startedEmulator(t)
	lt := &lossyTransport{forward: true}
	s := e.lossy(t, lt)
	other, err := gcsstore.Open(t.Context(), &gcsstore.Options{Bucket: s.Bucket(), Endpoint: e.endpoint})
	testutil.Opened(t, other, err)
	ctx := t.Context()
	lt.onUpload = func() {
		if _, err := other.Put(ctx, "k", []byte("theirs"), store.Unconditional); err != nil {
			t.Errorf("other writer: %v", err)
		}
	}
	lt.drop.Store(1)
	_, err = s.Put(ctx, "k", []byte("mine"), store.IfAbsent)
	if !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("err = %v, want ErrUnknownOutcome", err)
	}
	var oe *store.OpError
	if !errors.As(err, &oe) || oe.Backend != "gcsstore" || oe.Key != "k" {
		t.Fatalf("err %v is not an *OpError naming gcsstore and the key", err)
	}
}

func TestNotFoundAndMissingBucket(t *testing.T) {
	e := startedEmulator(t)
	s := e.open(t, "")
	ctx := t.Context()
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}
	if err := s.Delete(ctx, "nope", store.Unconditional); err != nil {
		t.Fatalf("unconditional Delete of a missing key: %v", err)
	}
	if _, err := s.Put(ctx, "nope", []byte("x"), store.IfMatch("12345")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("IfMatch on a missing key: %v", err)
	}
	nb, err := gcsstore.Open(ctx, &gcsstore.Options{Bucket: "lk-no-such-bucket-x", Endpoint: e.endpoint})
	testutil.Opened(t, nb, err)
	if _, err := nb.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get in a missing bucket: %v", err)
	}
	// A create in a missing bucket is not a lost race.
	for _, c := range []store.Condition{store.IfAbsent, store.IfMatch("12345"), store.Unconditional} {
		if _, err := nb.Put(ctx, "k", []byte("x"), c); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Put %s in a missing bucket: %v, want ErrNotFound", c, err)
		}
	}
}

// failAfter yields n bytes, then fails.
type failAfter struct{ n int }

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("source failed (injected)")
	}
	k := min(len(p), f.n)
	f.n -= k
	return k, nil
}

// A PutStream whose reader fails stores nothing: the upload is cut off
// before its closing boundary, never ended normally. Repeated, because
// ending it normally commits the truncated value only when it wins a race.
func TestFailedPutStreamStoresNothing(t *testing.T) {
	s := startedEmulator(t).open(t, "")
	ctx := t.Context()
	for i := range 40 {
		n := []int{1, 10, 4096, 100 << 10}[i%4]
		_, err := s.PutStream(ctx, "k", &failAfter{n: n}, store.Unconditional)
		if !errors.Is(err, store.ErrTransient) {
			t.Fatalf("round %d (%d bytes): err = %v, want ErrTransient", i, n, err)
		}
		if got, err := s.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d (%d bytes): Get = %q, %v; want ErrNotFound", i, n, got.Value, err)
		}
	}
}
