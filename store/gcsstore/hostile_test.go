package gcsstore_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/gcsstore"
)

// answer is a fake GCS: it answers every request with what fn returns
// and counts the requests. No network, so it runs inside synctest.
type answer struct {
	n  atomic.Int32
	fn func(r *http.Request) *http.Response
}

func (a *answer) RoundTrip(r *http.Request) (*http.Response, error) {
	a.n.Add(1)
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	resp := a.fn(r)
	resp.Request = r
	return resp, nil
}

func reply(status int, body string, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

func crc(s string) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc32.Checksum([]byte(s), crc32.MakeTable(crc32.Castagnoli)))
	return "crc32c=" + base64.StdEncoding.EncodeToString(b[:])
}

func hostile(t *testing.T, a *answer) *gcsstore.Store {
	t.Helper()
	s, err := gcsstore.Open(context.Background(), &gcsstore.Options{
		Bucket: "b", Endpoint: "http://gcs.invalid/storage/v1/", HTTPClient: &http.Client{Transport: a},
	})
	testutil.Opened(t, s, err)
	return s
}

// Bytes that fail the CRC32C the server sent are never returned as the
// value, by Get or by the end of GetStream; an answer that matches is.
func TestDownloadCRC32C(t *testing.T) {
	sent := "abd"
	a := &answer{fn: func(*http.Request) *http.Response {
		return reply(200, sent, "X-Goog-Generation", "5", "X-Goog-Hash", crc("abc")+",md5=AAAA")
	}}
	s := hostile(t, a)
	ctx := t.Context()
	if e, err := s.Get(ctx, "k"); !errors.Is(err, store.ErrTransient) || !strings.Contains(err.Error(), "CRC32C") {
		t.Fatalf("Get of corrupted bytes = %q, %v; want ErrTransient naming the CRC32C", e.Value, err)
	}
	if n := a.n.Load(); n != 1 {
		t.Fatalf("a corrupted answer was retried: %d requests", n)
	}
	r, v, err := s.GetStream(ctx, "k")
	if err != nil || v != "5" {
		t.Fatalf("GetStream = %v, %v", v, err)
	}
	if b, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "CRC32C") {
		t.Fatalf("GetStream read %q, %v; want an error naming the CRC32C", b, err)
	}
	r.Close()
	sent = "abc"
	if e, err := s.Get(ctx, "k"); err != nil || string(e.Value) != "abc" || e.Version != "5" {
		t.Fatalf("Get of intact bytes = %+v, %v", e, err)
	}
}

// A download whose answer names no generation cannot be given a version:
// the read fails (ErrTransient), unretried.
func TestDownloadWithoutGeneration(t *testing.T) {
	a := &answer{fn: func(*http.Request) *http.Response { return reply(200, "v") }}
	s := hostile(t, a)
	if e, err := s.Get(t.Context(), "k"); !errors.Is(err, store.ErrTransient) || !strings.Contains(err.Error(), "X-Goog-Generation") {
		t.Fatalf("Get = %+v, %v; want ErrTransient naming X-Goog-Generation", e, err)
	}
	if n := a.n.Load(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// A server that answers every list page with no names and a next-page
// token does not hold List forever: it stops after its request limit,
// returning the names it has with Next set, or ErrTransient with none.
func TestListEndlessEmptyPages(t *testing.T) {
	var first bool
	a := &answer{fn: func(r *http.Request) *http.Response {
		if first && r.URL.Query().Get("pageToken") == "" {
			return reply(200, `{"items":[{"name":"a","generation":"3"}],"nextPageToken":"t"}`)
		}
		return reply(200, `{"nextPageToken":"t"}`)
	}}
	s := hostile(t, a)
	if p, err := s.List(t.Context(), "", nil); !errors.Is(err, store.ErrTransient) {
		t.Fatalf("List = %+v, %v; want ErrTransient", p, err)
	}
	if n := a.n.Load(); n != 64 {
		t.Fatalf("%d list requests, want 64", n)
	}
	first = true
	p, err := s.List(t.Context(), "", nil)
	if err != nil || len(p.Items) != 1 || p.Items[0].Key != "a" || p.Items[0].Version != "3" || p.Next != "a" {
		t.Fatalf("List = %+v, %v; want [a@3] with Next a", p, err)
	}
}

// A read that keeps failing with a 503 is tried 4 times with backoff,
// then fails with ErrTransient; a 404 is not retried.
func TestReadRetriesAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &answer{fn: func(*http.Request) *http.Response {
			return reply(503, `{"error":{"code":503,"message":"busy","errors":[{"reason":"backendError"}]}}`)
		}}
		s := hostile(t, a)
		_, err := s.Get(t.Context(), "k")
		if !errors.Is(err, store.ErrTransient) || !strings.Contains(err.Error(), "backendError") {
			t.Fatalf("Get = %v; want ErrTransient with the reason", err)
		}
		if n := a.n.Load(); n != 4 {
			t.Fatalf("%d attempts, want 4", n)
		}
		a.n.Store(0)
		a.fn = func(*http.Request) *http.Response {
			return reply(404, `{"error":{"code":404,"message":"No such object"}}`)
		}
		if _, err := s.Get(t.Context(), "k"); !errors.Is(err, store.ErrNotFound) || a.n.Load() != 1 {
			t.Fatalf("Get = %v after %d requests; want ErrNotFound after 1", err, a.n.Load())
		}
	})
}

// An upload whose 200 answer is not the object resource is no answer: the
// store reads the object back for its nonce, and here finds it missing,
// so the create stays of unknown outcome (never a success without a
// version, never a conflict).
func TestUploadUnusableAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &answer{fn: func(r *http.Request) *http.Response {
			if r.Method == http.MethodPost {
				return reply(200, `<html>proxy</html>`)
			}
			return reply(404, `{"error":{"code":404,"message":"No such object"}}`)
		}}
		s := hostile(t, a)
		if _, err := s.Put(t.Context(), "k", []byte("v"), store.IfAbsent); !errors.Is(err, store.ErrUnknownOutcome) {
			t.Fatalf("Put = %v; want ErrUnknownOutcome", err)
		}
	})
}
