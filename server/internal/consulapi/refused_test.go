package consulapi

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// TestStaleCASIsRefusedWithoutTheWriter: a cas or delete-cas on a
// contended key (one that has refused a cas) whose index is already stale
// is answered false from the latest durable state, so a hot key's losers
// never queue behind the engine's writer (a group-commit
// round, a write transaction, a batch-mate's fsync). The writer is held
// busy here; before the fast path every refusal below waited for it. A
// cas on the current index still goes through the writer and applies once
// it is free, and no refusal consumes an index.
func TestStaleCASIsRefusedWithoutTheWriter(t *testing.T) {
	s := newTestServer(t, nil)
	put := func(path, body string) string {
		t.Helper()
		_, got := s.do(t, http.MethodPut, path, body)
		return got
	}
	if got := put("/v1/kv/hot", "a"); got != "true" {
		t.Fatalf("PUT: %s", got)
	}
	pair, _, err := s.client.KV().Get("hot", nil)
	if err != nil || pair == nil {
		t.Fatalf("get: %v %v", pair, err)
	}
	stale := pair.ModifyIndex
	if got := put("/v1/kv/hot?cas="+strconv.FormatUint(stale, 10), "b"); got != "true" {
		t.Fatalf("PUT ?cas=%d: %s", stale, got)
	}
	// A refusal through the writer marks a key as contended: its later
	// stale cases are answered from a snapshot.
	for _, path := range []string{"/v1/kv/hot", "/v1/kv/missing"} {
		if got := put(path+"?cas="+strconv.FormatUint(stale, 10), "x"); got != "false" {
			t.Fatalf("PUT %s?cas=%d: %s", path, stale, got)
		}
	}
	current := s.e.Index()

	// Hold the writer: an Update that waits for release.
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	held := make(chan error, 1)
	go func() {
		_, err := s.e.Update(context.Background(), func(*engine.Tx) error {
			once.Do(func() { close(started) })
			<-release
			return nil
		})
		held <- err
	}()
	<-started
	var releaseOnce sync.Once
	releaseWriter := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseWriter)

	send := func(method, path, body string) <-chan string {
		out := make(chan string, 1)
		go func() {
			req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
			if err != nil {
				out <- err.Error()
				return
			}
			resp, err := s.Client().Do(req)
			if err != nil {
				out <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out <- strconv.Itoa(resp.StatusCode) + " " + string(b)
		}()
		return out
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodPut, "/v1/kv/hot?cas=" + strconv.FormatUint(stale, 10)},     // an index read before the last write
		{http.MethodPut, "/v1/kv/hot?cas=0"},                                    // create-only on a key that exists
		{http.MethodPut, "/v1/kv/hot?cas=" + strconv.FormatUint(1<<40, 10)},     // an index never handed out
		{http.MethodPut, "/v1/kv/missing?cas=" + strconv.FormatUint(stale, 10)}, // a key that does not exist
		{http.MethodDelete, "/v1/kv/hot?cas=" + strconv.FormatUint(stale, 10)},
	} {
		select {
		case got := <-send(c.method, c.path, "x"):
			if got != "200 false" {
				t.Errorf("%s %s while the writer is busy: %q, want 200 false", c.method, c.path, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s: no answer while the writer is busy (a stale cas waits for the writer)", c.method, c.path)
		}
	}
	if got := s.e.Index(); got != current {
		t.Errorf("index %d after refusals, want %d (a refusal consumes none)", got, current)
	}

	// The current index applies, through the writer once it is free.
	applied := send(http.MethodPut, "/v1/kv/hot?cas="+strconv.FormatUint(current, 10), "c")
	releaseWriter()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if got := <-applied; got != "200 true" {
		t.Fatalf("PUT ?cas=%d (current): %q, want 200 true", current, got)
	}
	pair, _, err = s.client.KV().Get("hot", nil)
	if err != nil || pair == nil || string(pair.Value) != "c" || pair.ModifyIndex <= current {
		t.Fatalf("after the applied cas: %+v %v", pair, err)
	}
}
