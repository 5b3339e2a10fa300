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
// 412 (or 404) when it no longer does: 412 beats 409, as on S3.
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

// modRecord reports whether the key's last-mutation record exists.
func modRecord(t *testing.T, s *testServer, bucket, key string) bool {
	t.Helper()
	_, found := s.h.m.MutationRecord(bucket, key)
	return found
}

// TestConflictCreateDeleteDuringUpload: a key absent when a conditional
// PUT or Copy began, then created and deleted while its body streamed, was
// mutated meanwhile: 409 ConditionalRequestConflict (If-None-Match), as S3
// answers a write that raced a delete. The record that let us see
// it is removed afterwards; an abort of another upload is not a mutation.
func TestConflictCreateDeleteDuringUpload(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("cdd")
	s.put("/cdd/src", "copied")
	for _, tc := range []struct {
		name string
		hdr  []string
	}{
		{"PutObject", []string{"If-None-Match", "*"}},
		{"CopyObject", []string{"x-amz-copy-source", "/cdd/src", "If-None-Match", "*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "k-" + tc.name
			r := inflight(t, s, "/cdd/"+key, tc.hdr, func() {
				s.put("/cdd/"+key, "brief")
				s.mustDo(204, "DELETE", "/cdd/"+key, nil)
			})
			if e := r.err(); r.Status != 409 || e.Code != "ConditionalRequestConflict" || e.Condition != "If-None-Match" || e.Key != key {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
			s.mustDo(404, "GET", "/cdd/"+key, nil)
			if modRecord(t, s, "cdd", key) {
				t.Fatal("the kept mutation record outlived the request")
			}
			// The retry S3 asks for succeeds.
			s.mustDo(200, "PUT", "/cdd/"+key, []byte("retry"), "If-None-Match", "*")
		})
	}
	// Two deletes racing one writer: still one 409, and no record left.
	r := inflight(t, s, "/cdd/twice", []string{"If-None-Match", "*"}, func() {
		s.put("/cdd/twice", "a")
		s.mustDo(204, "DELETE", "/cdd/twice", nil)
		s.put("/cdd/twice", "b")
		s.mustDo(204, "DELETE", "/cdd/twice", nil)
	})
	if r.Status != 409 || modRecord(t, s, "cdd", "twice") {
		t.Fatalf("twice: %d %s", r.Status, r.Body)
	}
	// A key whose record only an upload kept: aborting that upload while a
	// conditional PUT streams changes no object, so the PUT wins.
	s.put("/cdd/up", "v")
	m := s.createMPU("/cdd/up")
	s.mustDo(204, "DELETE", "/cdd/up", nil)
	r = inflight(t, s, "/cdd/up", []string{"If-None-Match", "*"}, func() {
		s.mustDo(204, "DELETE", "/cdd/up?uploadId="+m.id, nil)
	})
	if r.Status != 200 {
		t.Fatalf("abort during a conditional PUT: %d %s", r.Status, r.Body)
	}
	// A conditional write that finds the key absent and untouched leaves
	// no record behind when it fails for another reason.
	r = s.do("PUT", "/cdd/none", []byte("x"), "If-Match", `"x"`)
	if r.Status != 404 || modRecord(t, s, "cdd", "none") {
		t.Fatalf("If-Match on a missing key: %d %s", r.Status, r.Body)
	}
}
