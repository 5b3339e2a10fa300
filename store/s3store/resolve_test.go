package s3store_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
)

// fault is one injected failure: the first Times requests with Method
// (and, when set, carrying Header) get Action.
type fault struct {
	Method string
	Header string // e.g. "If-None-Match"; "" matches any
	Action string // "drop-after": forward, then cut the connection; "503-before": answer 503 without forwarding
	Times  int
}

// faultProxy sits between the store and a real server and injects faults;
// everything else passes through untouched (signatures stay valid because
// the Host header is kept).
type faultProxy struct {
	target string
	mu     sync.Mutex
	faults []*fault
	hits   map[string]int
}

func newFaultProxy(t *testing.T, target string) (*faultProxy, string) {
	p := &faultProxy{target: target, hits: map[string]int{}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *faultProxy) add(f fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &f)
}

func (p *faultProxy) take(r *http.Request) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.faults {
		if f.Times > 0 && f.Method == r.Method && (f.Header == "" || r.Header.Get(f.Header) != "") {
			f.Times--
			p.hits[f.Method+" "+f.Action]++
			return f.Action
		}
	}
	return ""
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action := p.take(r)
	if action == "503-before" {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	out.ContentLength = r.ContentLength
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), 502)
		return
	}
	defer resp.Body.Close()
	if action == "drop-after" {
		io.Copy(io.Discard, resp.Body) // the write has happened; the client never hears of it
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// openVia opens a store on a fresh bucket of our server, through a fault
// proxy.
func openVia(t *testing.T) (*s3store.Store, *s3store.Store, *faultProxy) {
	t.Helper()
	p := latchkeyPeer(t)
	direct := p.open(t)
	proxy, url := newFaultProxy(t, p.endpoint)
	via := p
	via.endpoint = url
	o := via.options()
	o.ResolveBackoff = time.Millisecond
	s, err := s3store.Open(context.Background(), direct.Bucket(), "", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, direct, proxy
}

func TestAmbiguousPutResolved(t *testing.T) {
	ctx := context.Background()
	t.Run("create applied, answer lost: won via the nonce", func(t *testing.T) {
		s, direct, proxy := openVia(t)
		proxy.add(fault{Method: "PUT", Header: "If-None-Match", Action: "drop-after", Times: 1})
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
		s, direct, proxy := openVia(t)
		proxy.add(fault{Method: "PUT", Header: "If-None-Match", Action: "drop-after", Times: 1})
		proxy.add(fault{Method: "HEAD", Action: "503-before", Times: 1})
		v, err := s.Put(ctx, "k", []byte("mine"), store.IfAbsent)
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		if e, _ := direct.Get(ctx, "k"); e.Version != v {
			t.Fatalf("version %s, stored %s", v, e.Version)
		}
		if proxy.hits["HEAD 503-before"] != 1 {
			t.Fatalf("the HEAD fault did not fire: %v", proxy.hits)
		}
	})
	t.Run("CAS applied, answer lost: won", func(t *testing.T) {
		s, direct, proxy := openVia(t)
		v1, err := direct.Put(ctx, "k", []byte("a"), store.IfAbsent)
		if err != nil {
			t.Fatal(err)
		}
		proxy.add(fault{Method: "PUT", Header: "If-Match", Action: "drop-after", Times: 1})
		proxy.add(fault{Method: "HEAD", Action: "503-before", Times: 1})
		v2, err := s.Put(ctx, "k", []byte("b"), store.IfMatch(v1))
		if err != nil || v2 == v1 {
			t.Fatalf("Put = %s, %v", v2, err)
		}
	})
	t.Run("503 before the write: resent and applied once", func(t *testing.T) {
		s, direct, proxy := openVia(t)
		proxy.add(fault{Method: "PUT", Action: "503-before", Times: 1})
		v, err := s.Put(ctx, "k", []byte("x"), store.IfAbsent)
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		if e, _ := direct.Get(ctx, "k"); e.Version != v {
			t.Fatalf("version %s, stored %s", v, e.Version)
		}
	})
	t.Run("another writer's object after an unanswered attempt: ErrUnknownOutcome, not a false win", func(t *testing.T) {
		s, direct, proxy := openVia(t)
		proxy.add(fault{Method: "PUT", Action: "503-before", Times: 1})
		// The first attempt gets a 503 (outcome unknown to the client);
		// the key already holds another writer's object.
		proxy.add(fault{Method: "HEAD", Action: "503-before", Times: 1})
		if _, err := direct.Put(ctx, "k", []byte("theirs"), store.IfAbsent); err != nil {
			t.Fatal(err)
		}
		_, err := s.Put(ctx, "k", []byte("mine"), store.IfAbsent)
		if !errors.Is(err, store.ErrUnknownOutcome) || !strings.Contains(err.Error(), "412") {
			t.Fatalf("Put = %v, want ErrUnknownOutcome carrying the resend's 412", err)
		}
		if e, _ := direct.Get(ctx, "k"); string(e.Value) != "theirs" {
			t.Fatalf("value %q", e.Value)
		}
	})
	t.Run("a definite conflict on the first attempt is ErrConflict", func(t *testing.T) {
		s, direct, _ := openVia(t)
		if _, err := direct.Put(ctx, "k", []byte("theirs"), store.IfAbsent); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "k", []byte("mine"), store.IfAbsent); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Put = %v, want ErrConflict", err)
		}
	})
	t.Run("every attempt unanswered: ErrUnknownOutcome", func(t *testing.T) {
		s, _, proxy := openVia(t)
		proxy.add(fault{Method: "PUT", Action: "503-before", Times: 100})
		proxy.add(fault{Method: "HEAD", Action: "503-before", Times: 100})
		proxy.add(fault{Method: "GET", Action: "503-before", Times: 100})
		_, err := s.Put(ctx, "k", []byte("x"), store.IfAbsent)
		if !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("Put = %v, want ErrUnknownOutcome", err)
		}
		if !strings.Contains(err.Error(), "503") {
			t.Fatalf("error hides the status: %v", err)
		}
	})
	t.Run("delete applied, answer lost: unknown, not resent (a late copy could delete a later write)", func(t *testing.T) {
		s, direct, proxy := openVia(t)
		if _, err := direct.Put(ctx, "k", []byte("x"), store.Unconditional); err != nil {
			t.Fatal(err)
		}
		proxy.add(fault{Method: "DELETE", Action: "drop-after", Times: 1})
		if err := s.Delete(ctx, "k", store.Unconditional); !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("Delete = %v, want ErrUnknownOutcome", err)
		}
		if _, err := direct.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after delete: %v", err)
		}
	})
	t.Run("conditional delete applied, answer lost: unknown, not a false conflict", func(t *testing.T) {
		s, direct, proxy := openVia(t)
		v, err := direct.Put(ctx, "k", []byte("x"), store.Unconditional)
		if err != nil {
			t.Fatal(err)
		}
		proxy.add(fault{Method: "DELETE", Action: "drop-after", Times: 1})
		err = s.Delete(ctx, "k", store.IfMatch(v))
		if !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("Delete = %v, want ErrUnknownOutcome", err)
		}
	})
}
