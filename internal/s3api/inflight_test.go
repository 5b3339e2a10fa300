package s3api

import (
	"testing"
)

// inflight runs between while a conditional PUT to path is between its
// request-start snapshot and its commit, and returns the PUT's response.
func inflight(t *testing.T, s *testServer, path string, hdr []string, between func()) resp {
	t.Helper()
	reached, resume := make(chan struct{}), make(chan struct{})
	hook := func() {
		s.h.afterPrecheck.Store(nil) // the writes of between are not held
		close(reached)
		<-resume
	}
	s.h.afterPrecheck.Store(&hook)
	done := make(chan resp, 1)
	go func() {
		r, err := s.try("PUT", path, []byte("new"), hdr...)
		if err != nil {
			r.Status = -1
		}
		done <- r
	}()
	<-reached
	between()
	close(resume)
	return <-done
}

// TestConflictDuringUpload: a conditional PUT whose key is changed by
// another write while its body streams answers 409
// ConditionalRequestConflict when its precondition would still pass, and
// 412 (or 404) when it no longer does (spec §3: 412 beats 409).
func TestConflictDuringUpload(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("infl")
	et := s.put("/infl/b", "same")
	cases := []struct {
		name    string
		hdr     []string
		between func()
		status  int
		code    string
	}{
		{"If-Match, identical overwrite meanwhile", []string{"If-Match", et}, func() { s.put("/infl/b", "same") }, 409, "ConditionalRequestConflict"},
		{"If-Match, different overwrite meanwhile", []string{"If-Match", et}, func() { s.put("/infl/b", "other") }, 412, "PreconditionFailed"},
		{"If-Match, deleted meanwhile", []string{"If-Match", md5ETag("other")}, func() { s.mustDo(204, "DELETE", "/infl/b", nil) }, 404, "NoSuchKey"},
		{"If-None-Match, created meanwhile", []string{"If-None-Match", "*"}, func() { s.put("/infl/b", "same") }, 412, "PreconditionFailed"},
		{"unconditional never conflicts", nil, func() { s.put("/infl/b", "x") }, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := inflight(t, s, "/infl/b", tc.hdr, tc.between)
			if r.Status != tc.status || r.err().Code != tc.code {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
			if tc.status == 409 && (r.err().Key != "b" || r.err().Condition != "If-Match") {
				t.Fatalf("409 body %s", r.Body)
			}
		})
	}
	if g := s.mustDo(200, "GET", "/infl/b", nil); string(g.Body) != "new" {
		t.Fatalf("the unconditional in-flight PUT committed last: %q", g.Body)
	}
}
