package engine_test

import (
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/internal/consulapi"
	"github.com/latchkey/latchkey/server/internal/crashtest"
	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api"
)

// The refusals of the S3 and Consul APIs, decided inside a group commit
// on a batch-mate's write that never commits: CreateBucket "already
// yours" (200 in us-east-1, 409 elsewhere), PUT If-None-Match 412, DELETE
// If-Match 404, /v1/txn 409. The batch's first member makes the commit
// fail (the file may not grow, as on a full disk); every answer of the
// batch must then be a server error, never the refusal, because after a
// restart none of the batch-mates' writes exists.
func TestFailedCommitRefusalsOfTheAPIs(t *testing.T) {
	refusalsOfAFailedCommit(t, engine.OpenHeldFailing(t, 1<<20), 2<<20)
}

// The same on a real full disk: a 4 MiB tmpfs, fsync on, the commit fails
// with ENOSPC.
func TestFailedCommitRefusalsOfTheAPIsOnFullDisk(t *testing.T) {
	refusalsOfAFailedCommit(t, engine.OpenHeldIn(t, crashtest.Tmpfs(t, 4<<20)), 8<<20)
}

// refusalsOfAFailedCommit runs the batch on h; its first member writes
// big bytes, which must make the commit fail.
func refusalsOfAFailedCommit(t *testing.T, h *engine.Held, big int) {
	s3 := httptest.NewServer(s3api.MustNew(h.Engine, &s3api.Options{Anonymous: true, Logger: quiet}))
	defer s3.Close()
	s3eu := httptest.NewServer(s3api.MustNew(h.Engine, &s3api.Options{Anonymous: true, Region: "eu-west-1", Logger: quiet}))
	defer s3eu.Close()
	ch, err := consulapi.New(h.Engine, &consulapi.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	consul := httptest.NewServer(ch)
	defer consul.Close()

	// Committed before the hold: bucket pre with object o.
	for _, r := range []struct{ method, url, body string }{
		{"PUT", s3.URL + "/pre", ""},
		{"PUT", s3.URL + "/pre/o", "old"},
	} {
		if st, b := send(t, r.method, r.url, r.body); st != 200 {
			t.Fatalf("setup %s %s: %d %s", r.method, r.url, st, b)
		}
	}

	var wg sync.WaitGroup
	h.StartFirst(t, &wg)
	type answer struct {
		name   string
		status int
		body   string
	}
	var mu sync.Mutex
	var answers []answer
	queued := 0
	step := func(name string, fn func() (int, string)) {
		wg.Go(func() {
			st, b := fn()
			mu.Lock()
			answers = append(answers, answer{name, st, b})
			mu.Unlock()
		})
		queued++
		for deadline := time.Now().Add(10 * time.Second); h.Queued() < queued; runtime.Gosched() { // one batch, in this order
			if time.Now().After(deadline) {
				t.Fatalf("%s never queued an Update", name)
			}
		}
	}
	req := func(method, url, body string, hdr ...string) func() (int, string) {
		return func() (int, string) { return send(t, method, url, body, hdr...) }
	}
	step("the failing write", func() (int, string) {
		if err := h.PutLarge("big", big); err == nil {
			return 200, ""
		}
		return 500, ""
	})
	step("create bucket", req("PUT", s3.URL+"/new", ""))
	step("create bucket again (already yours, 200)", req("PUT", s3.URL+"/new", ""))
	step("create bucket again (eu-west-1: 409)", req("PUT", s3eu.URL+"/new", ""))
	step("put object", req("PUT", s3.URL+"/pre/fresh", "v"))
	step("put If-None-Match * (412)", req("PUT", s3.URL+"/pre/fresh", "w", "If-None-Match", "*"))
	step("delete object", req("DELETE", s3.URL+"/pre/o", ""))
	step("delete If-Match (404)", req("DELETE", s3.URL+"/pre/o", "", "If-Match", `"`+md5hex("old")+`"`))
	step("consul put", req("PUT", consul.URL+"/v1/kv/k", "v"))
	step("txn cas=0 (409)", req("PUT", consul.URL+"/v1/txn",
		`[{"KV":{"Verb":"cas","Key":"k","Value":"dw==","Index":0}}]`))
	h.Release(queued)
	wg.Wait()

	if !errors.Is(h.Err(), engine.ErrFailed) {
		t.Fatalf("the batch's commit did not fail: %v", h.Err())
	}
	t.Logf("commit failure: %v", h.Err())
	if len(answers) != queued {
		t.Fatalf("%d answers for %d requests", len(answers), queued)
	}
	for _, a := range answers {
		if a.status < 500 {
			t.Errorf("%s answered %d in a batch whose commit failed: %.200s", a.name, a.status, a.body)
		}
	}

	// After a restart, none of the batch's writes exists: a refusal
	// would have rested on nothing.
	s3.Close()
	s3eu.Close()
	consul.Close()
	ch.Close()
	dir := h.Engine.Dir()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s3 = httptest.NewServer(s3api.MustNew(e, &s3api.Options{Anonymous: true, Logger: quiet}))
	defer s3.Close()
	ch, err = consulapi.New(e, &consulapi.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	consul = httptest.NewServer(ch)
	defer consul.Close()
	for _, c := range []struct {
		url  string
		want int
	}{{s3.URL + "/new", 404}, {s3.URL + "/pre/fresh", 404}, {s3.URL + "/pre/o", 200}, {consul.URL + "/v1/kv/k", 404}} {
		if st, b := send(t, "GET", c.url, ""); st != c.want {
			t.Errorf("after reopen GET %s: %d %.200s, want %d", c.url, st, b, c.want)
		}
	}
}

var quiet = slog.New(slog.DiscardHandler)

func md5hex(s string) string { return fmt.Sprintf("%x", md5.Sum([]byte(s))) }

func send(t *testing.T, method, url, body string, hdr ...string) (int, string) {
	r, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
