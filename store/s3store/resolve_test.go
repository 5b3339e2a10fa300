package s3store_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/faultproxy"
	"github.com/latchkey/latchkey/store/s3store"
)

// slowDown is S3's 503 answer to a request it refused before applying.
const slowDown = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`

// dropAfter forwards the first n requests with method (and header, when
// not empty) and loses their answers; refuse503 answers them 503
// SlowDown without forwarding.
func dropAfter(method, header string, n int) faultproxy.Rule {
	return faultproxy.Rule{Match: faultproxy.Method(method, header), Action: faultproxy.Drop, Times: n}
}

func refuse503(method string, n int) faultproxy.Rule {
	return faultproxy.Rule{Match: faultproxy.Method(method, ""), Action: faultproxy.Refuse, Status: 503, Body: slowDown, Times: n}
}

// openVia opens a store on a fresh bucket of our server through a fault
// proxy, with hc as its HTTP client (nil: the SDK's), and a direct store
// on the same bucket to look at what really happened.
func openVia(t *testing.T, hc *http.Client) (via, direct *s3store.Store, proxy *faultproxy.HTTP) {
	t.Helper()
	p := latchkeyPeer(t)
	direct = p.open(t)
	proxy = faultproxy.NewHTTP(t, p.endpoint)
	vp := p
	vp.endpoint = proxy.URL
	o := vp.options()
	o.ResolveBackoff = time.Millisecond
	o.HTTPClient = hc
	via, err := s3store.Open(context.Background(), direct.Bucket(), "", o)
	testutil.Opened(t, via, err)
	return via, direct, proxy
}

func TestAmbiguousPutResolved(t *testing.T) {
	ctx := context.Background()
	t.Run("create applied, answer lost: won via the nonce", func(t *testing.T) {
		s, direct, proxy := openVia(t, nil)
		proxy.Add(dropAfter("PUT", "If-None-Match", 1))
		v, err := s.Put(ctx, "k", []byte("mine"), store.IfAbsent)
		if err != nil {
			t.Fatalf("Put after a lost answer: %v", err)
		}
		e, err := direct.Get(ctx, "k")
		if err != nil || e.Version != v || string(e.Value) != "mine" {
			t.Fatalf("Get = %q %s %v; Put returned %s", e.Value, e.Version, err, v)
		}
	})
	t.Run("create applied, answer lost, HEAD fails: the resend's 412 is our own write", func(t *testing.T) {
		s, direct, proxy := openVia(t, nil)
		proxy.Add(dropAfter("PUT", "If-None-Match", 1))
		proxy.Add(refuse503("HEAD", 1))
		v, err := s.Put(ctx, "k", []byte("mine"), store.IfAbsent)
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		if e, _ := direct.Get(ctx, "k"); e.Version != v {
			t.Fatalf("version %s, stored %s", v, e.Version)
		}
		if n := proxy.Hits(faultproxy.Refuse); n != 1 {
			t.Fatalf("the HEAD fault fired %d times, want 1", n)
		}
	})
	t.Run("CAS applied, answer lost: won", func(t *testing.T) {
		s, direct, proxy := openVia(t, nil)
		v1, err := direct.Put(ctx, "k", []byte("a"), store.IfAbsent)
		if err != nil {
			t.Fatal(err)
		}
		proxy.Add(dropAfter("PUT", "If-Match", 1))
		proxy.Add(refuse503("HEAD", 1))
		v2, err := s.Put(ctx, "k", []byte("b"), store.IfMatch(v1))
		if err != nil || v2 == v1 {
			t.Fatalf("Put = %s, %v", v2, err)
		}
	})
	t.Run("503 before a CAS: resent and applied once", func(t *testing.T) {
		s, direct, proxy := openVia(t, nil)
		v0, err := direct.Put(ctx, "k", []byte("a"), store.IfAbsent)
		if err != nil {
			t.Fatal(err)
		}
		proxy.Add(refuse503("PUT", 1))
		v, err := s.Put(ctx, "k", []byte("x"), store.IfMatch(v0))
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		if e, _ := direct.Get(ctx, "k"); e.Version != v || string(e.Value) != "x" {
			t.Fatalf("version %s, stored %q at %s", v, e.Value, e.Version)
		}
	})
	t.Run("503 before a create: not resent, ErrUnknownOutcome", func(t *testing.T) {
		// A create's late first copy would recreate the key after a
		// delete that followed a resend's success; only the nonce decides.
		s, direct, proxy := openVia(t, nil)
		proxy.Add(refuse503("PUT", 1))
		_, err := s.Put(ctx, "k", []byte("x"), store.IfAbsent)
		if !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("Put = %v, want ErrUnknownOutcome", err)
		}
		if _, err := direct.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after a refused create: %v", err)
		}
	})
	t.Run("another writer's object after an unanswered attempt: ErrUnknownOutcome, not a false win", func(t *testing.T) {
		s, direct, proxy := openVia(t, nil)
		proxy.Add(refuse503("PUT", 1))
		// The first attempt gets a 503 (outcome unknown to the client);
		// the key already holds another writer's object.
		proxy.Add(refuse503("HEAD", 1))
		v0, err := direct.Put(ctx, "k", []byte("before"), store.IfAbsent)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := direct.Put(ctx, "k", []byte("theirs"), store.IfMatch(v0)); err != nil {
			t.Fatal(err)
		}
		_, err = s.Put(ctx, "k", []byte("mine"), store.IfMatch(v0))
		if !errors.Is(err, store.ErrUnknownOutcome) || !strings.Contains(err.Error(), "412") {
			t.Fatalf("Put = %v, want ErrUnknownOutcome carrying the resend's 412", err)
		}
		if e, _ := direct.Get(ctx, "k"); string(e.Value) != "theirs" {
			t.Fatalf("value %q", e.Value)
		}
	})
	t.Run("a definite conflict on the first attempt is ErrConflict", func(t *testing.T) {
		s, direct, _ := openVia(t, nil)
		if _, err := direct.Put(ctx, "k", []byte("theirs"), store.IfAbsent); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "k", []byte("mine"), store.IfAbsent); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Put = %v, want ErrConflict", err)
		}
	})
	t.Run("every attempt unanswered: ErrUnknownOutcome", func(t *testing.T) {
		s, _, proxy := openVia(t, nil)
		proxy.Add(refuse503("PUT", 100))
		proxy.Add(refuse503("HEAD", 100))
		proxy.Add(refuse503("GET", 100))
		_, err := s.Put(ctx, "k", []byte("x"), store.IfAbsent)
		if !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("Put = %v, want ErrUnknownOutcome", err)
		}
		if !strings.Contains(err.Error(), "503") {
			t.Fatalf("error hides the status: %v", err)
		}
	})
	t.Run("delete applied, answer lost: unknown, not resent (a late copy could delete a later write)", func(t *testing.T) {
		s, direct, proxy := openVia(t, nil)
		if _, err := direct.Put(ctx, "k", []byte("x"), store.Unconditional); err != nil {
			t.Fatal(err)
		}
		proxy.Add(dropAfter("DELETE", "", 1))
		if err := s.Delete(ctx, "k", store.Unconditional); !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("Delete = %v, want ErrUnknownOutcome", err)
		}
		if _, err := direct.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after delete: %v", err)
		}
	})
	t.Run("conditional delete applied, answer lost: unknown, not a false conflict", func(t *testing.T) {
		s, direct, proxy := openVia(t, nil)
		v, err := direct.Put(ctx, "k", []byte("x"), store.Unconditional)
		if err != nil {
			t.Fatal(err)
		}
		proxy.Add(dropAfter("DELETE", "", 1))
		err = s.Delete(ctx, "k", store.IfMatch(v))
		if !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("Delete = %v, want ErrUnknownOutcome", err)
		}
	})
}

// TestReadRetried: a read that fails transiently is sent again, up to
// three sends in all (a 503 once: the Get succeeds; 503 every time: the
// third answer is the error, ErrTransient), while a write is sent once.
func TestReadRetried(t *testing.T) {
	ctx := context.Background()
	s, direct, proxy := openVia(t, nil)
	if _, err := direct.Put(ctx, "k", []byte("v"), store.IfAbsent); err != nil {
		t.Fatal(err)
	}
	proxy.Add(refuse503("GET", 1))
	if e, err := s.Get(ctx, "k"); err != nil || string(e.Value) != "v" {
		t.Fatalf("Get after one 503 = %q, %v", e.Value, err)
	}
	proxy.Add(refuse503("GET", 100))
	if _, err := s.Get(ctx, "k"); !errors.Is(err, store.ErrTransient) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Get under 503s = %v, want ErrTransient with the status", err)
	}
	if n := proxy.Hits(faultproxy.Refuse); n != 1+3 {
		t.Fatalf("%d refused GETs, want 1 then 3", n)
	}
	proxy.Add(refuse503("PUT", 100))
	if _, err := s.Put(ctx, "k2", []byte("v"), store.Unconditional); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("Put under 503s = %v, want ErrUnknownOutcome", err)
	}
	if n := proxy.Hits(faultproxy.Refuse); n != 4+1 {
		t.Fatalf("an unconditional Put was sent %d times, want once", n-4)
	}
}
