package s3api

import (
	"fmt"
	"testing"
)

// TestWriteConditionMatrixAllOps runs the rows of the write-outcome table
// (docs/wire-s3.md, "Conditional requests") against each
// of the three operations that take write preconditions — PutObject,
// CopyObject (destination) and CompleteMultipartUpload — over HTTP: status,
// code, Condition, Header, additionalMessage and Key, and that a refused
// write leaves the key (and the engine) exactly as it was.
func TestWriteConditionMatrixAllOps(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("plain")
	s.versionedBucket("vers")
	s.put("/plain/source", "new")
	cur := md5ETag("old")
	type op struct {
		name string
		// prepare runs after the key's setup (a multipart upload is
		// created here, so its snapshot already sees the setup); send
		// issues the conditional write.
		prepare func(path string) func(hdr []string) resp
	}
	ops := []op{
		{"PutObject", func(path string) func([]string) resp {
			return func(hdr []string) resp { return s.do("PUT", path, []byte("new"), hdr...) }
		}},
		{"CopyObject", func(path string) func([]string) resp {
			return func(hdr []string) resp {
				return s.do("PUT", path, nil, append([]string{"x-amz-copy-source", "/plain/source"}, hdr...)...)
			}
		}},
		{"CompleteMultipartUpload", func(path string) func([]string) resp {
			m := s.createMPU(path)
			m.part(1, "new")
			return func(hdr []string) resp { return m.complete(hdr, 1) }
		}},
	}
	rows := []struct {
		name                     string
		setup                    string // "absent", "present", "marker" (versioned bucket, marker over a version), "marker-only"
		hdr                      []string
		status                   int
		code, cond, header, addl string
		errKey                   bool
	}{
		{"INM * absent", "absent", []string{"If-None-Match", "*"}, 200, "", "", "", "", false},
		{"INM * present", "present", []string{"If-None-Match", "*"}, 412, "PreconditionFailed", "If-None-Match", "", "", false},
		{"INM * over a delete marker", "marker", []string{"If-None-Match", "*"}, 200, "", "", "", "", false},
		{"INM * over a lone delete marker", "marker-only", []string{"If-None-Match", "*"}, 200, "", "", "", "", false},
		{"INM etag", "present", []string{"If-None-Match", cur}, 501, "NotImplemented", "", "If-None-Match", addINM, false},
		{"INM etag on absent", "absent", []string{"If-None-Match", cur}, 501, "NotImplemented", "", "If-None-Match", addINM, false},
		{"IM equal", "present", []string{"If-Match", cur}, 200, "", "", "", "", false},
		{"IM equal unquoted", "present", []string{"If-Match", cur[1 : len(cur)-1]}, 200, "", "", "", "", false},
		{"IM differs", "present", []string{"If-Match", md5ETag("other")}, 412, "PreconditionFailed", "If-Match", "", "", false},
		{"IM on a never-written key", "absent", []string{"If-Match", cur}, 404, "NoSuchKey", "", "", "", true},
		{"IM malformed on a never-written key", "absent", []string{"If-Match", "garbage"}, 404, "NoSuchKey", "", "", "", true},
		{"IM over a delete marker", "marker", []string{"If-Match", cur}, 404, "NoSuchKey", "", "", "", true},
		{"IM *", "present", []string{"If-Match", "*"}, 501, "NotImplemented", "", "If-Match", addIM, false},
		{"IM * on absent", "absent", []string{"If-Match", "*"}, 501, "NotImplemented", "", "If-Match", addIM, false},
		{"both headers", "present", []string{"If-Match", cur, "If-None-Match", "*"}, 501, "NotImplemented", "", "If-Match,If-None-Match", addTwo, false},
	}
	n := 0
	for _, o := range ops {
		for _, tc := range rows {
			t.Run(o.name+"/"+tc.name, func(t *testing.T) {
				n++
				key := fmt.Sprintf("k%d", n)
				path := s.condKey(tc.setup, key)
				send := o.prepare(path)
				before := s.stateOf()
				beforeGet := s.do("GET", path, nil)
				r := send(tc.hdr)
				wantWriteAnswer(t, r, key, tc.status, tc.code, tc.cond, tc.header, tc.addl, tc.errKey)
				if tc.status != 200 {
					if after := s.stateOf(); after != before {
						t.Fatalf("a refused write changed state:\nbefore %s\nafter  %s", before, after)
					}
					if g := s.do("GET", path, nil); g.Status != beforeGet.Status || g.err().Code != beforeGet.err().Code ||
						(g.Status == 200 && string(g.Body) != string(beforeGet.Body)) {
						t.Fatalf("key changed: %d %q", g.Status, g.Body)
					}
					return
				}
				if g := s.mustDo(200, "GET", path, nil); string(g.Body) != "new" {
					t.Fatalf("write did not land: %q", g.Body)
				}
			})
		}
	}
}

// TestInProgressUploadIsInvisible: parts of an unfinished multipart upload
// do not make a key exist for write preconditions, as on S3.
func TestInProgressUploadIsInvisible(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("ipu")
	m := s.createMPU("/ipu/k")
	m.part(1, "parts")
	s.mustRefuse(404, "NoSuchKey", "PUT", "/ipu/k", []byte("x"), "If-Match", m.etags[1])
	s.mustRefuse(404, "NoSuchKey", "DELETE", "/ipu/k", nil, "If-Match", "*")
	s.mustDo(200, "PUT", "/ipu/k", []byte("plain"), "If-None-Match", "*")
	// The upload now completes against a key created since it began: 412.
	if r := m.complete([]string{"If-None-Match", "*"}, 1); r.Status != 412 || r.err().Condition != "If-None-Match" {
		t.Fatalf("complete after a PUT created the key: %d %s", r.Status, r.Body)
	}
}

// wantWriteAnswer checks the answer to a conditional write of key: its
// status and error elements (Code, Condition, Header, additionalMessage),
// the Key element when errKey, and a 412's message.
func wantWriteAnswer(t *testing.T, r resp, key string, status int, code, cond, header, addl string, errKey bool) {
	t.Helper()
	e := r.err()
	if r.Status != status || e.Code != code || e.Condition != cond || e.Header != header || e.AdditionalMessage != addl {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
	if errKey && e.Key != key {
		t.Fatalf("Key element %q, want %q", e.Key, key)
	}
	if code == "PreconditionFailed" && e.Message != msgPrecondition {
		t.Fatalf("412 message %q", e.Message)
	}
}

// condKey sets key up for a conditional-write row as setup names it, in
// the buckets "plain" and "vers" (versioned), and returns its path:
// "absent" (in plain), "present" (a version "old" in plain), "marker" (a
// delete marker over "old" in vers), "marker-only" (a lone delete marker
// in vers).
func (s *testServer) condKey(setup, key string) string {
	s.t.Helper()
	switch setup {
	case "present":
		s.put("/plain/"+key, "old")
	case "marker":
		s.put("/vers/"+key, "old")
		s.mustDo(204, "DELETE", "/vers/"+key, nil)
	case "marker-only":
		s.mustDo(204, "DELETE", "/vers/"+key, nil)
	}
	if setup == "marker" || setup == "marker-only" {
		return "/vers/" + key
	}
	return "/plain/" + key
}
