package s3api

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func md5ETag(s string) string {
	sum := md5.Sum([]byte(s))
	return fmt.Sprintf(`"%x"`, sum)
}

func TestObjectCRUD(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("bk1")
	et := s.put("/bk1/dir/a.txt", "hello", "Content-Type", "text/plain",
		"x-amz-meta-color", "blue", "x-amz-meta-empty", "", "Cache-Control", "no-cache")
	if et != md5ETag("hello") {
		t.Fatalf("etag %s, want %s", et, md5ETag("hello"))
	}
	r := s.mustDo(200, "GET", "/bk1/dir/a.txt", nil)
	if string(r.Body) != "hello" || r.Header.Get("Content-Type") != "text/plain" || r.Header.Get("ETag") != et ||
		r.Header.Get("Cache-Control") != "no-cache" || r.Header.Get("Last-Modified") == "" {
		t.Fatalf("get: %q %v", r.Body, r.Header)
	}
	if r.Header.Get("x-amz-meta-color") != "blue" {
		t.Fatalf("metadata lost: %v", r.Header)
	}
	if v, ok := r.Header["X-Amz-Meta-Empty"]; !ok || len(v) != 1 || v[0] != "" {
		t.Fatalf("empty metadata value not kept: %v", r.Header)
	}
	if r.Header.Get("x-amz-version-id") != "" {
		t.Fatalf("unversioned bucket returned a version id")
	}
	h := s.mustDo(200, "HEAD", "/bk1/dir/a.txt", nil)
	if h.Header.Get("Content-Length") != "5" || len(h.Body) != 0 {
		t.Fatalf("head: %v", h.Header)
	}
	// Overwrite, then delete; the blob of the old version must not leak.
	big := strings.Repeat("x", inlineMax+10)
	s.put("/bk1/dir/a.txt", big)
	if got := s.mustDo(200, "GET", "/bk1/dir/a.txt", nil).Body; string(got) != big {
		t.Fatalf("big body round trip: %d bytes", len(got))
	}
	s.mustDo(204, "DELETE", "/bk1/dir/a.txt", nil)
	g := s.mustDo(404, "GET", "/bk1/dir/a.txt", nil)
	if e := g.err(); e.Code != "NoSuchKey" || e.Key != "dir/a.txt" || e.RequestId == "" || e.Resource != "/bk1/dir/a.txt" {
		t.Fatalf("error body %+v", e)
	}
	if g.Header.Get("x-amz-request-id") == "" {
		t.Fatal("no x-amz-request-id")
	}
	if hd := s.mustDo(404, "HEAD", "/bk1/dir/a.txt", nil); len(hd.Body) != 0 {
		t.Fatalf("HEAD error with a body")
	}
	// Unconditional delete of a missing key is 204.
	s.mustDo(204, "DELETE", "/bk1/never", nil)
}

func TestKeysWithSpecialPaths(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("bk1")
	for _, key := range []string{"a//b", "a/../b", "x%2Fy", "sp%20ace", "..", "a/./b/"} {
		body := "v:" + key
		s.put("/bk1/"+key, body)
		if got := s.mustDo(200, "GET", "/bk1/"+key, nil).Body; string(got) != body {
			t.Errorf("key %q: got %q", key, got)
		}
	}
	// "a//b" and "a/b" are different keys.
	s.mustDo(404, "GET", "/bk1/a/b", nil)
}

func TestBadInput(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("bk1")
	cases := []refusal{
		{"put into missing bucket", "PUT", "/nope/k", "x", nil, 404, "NoSuchBucket"},
		{"bad bucket name", "PUT", "/Bad_Name", "", nil, 400, "InvalidBucketName"},
		{"bad digest", "PUT", "/bk1/k", "hello", []string{"Content-MD5", base64.StdEncoding.EncodeToString(make([]byte, 16))}, 400, "BadDigest"},
		{"invalid digest", "PUT", "/bk1/k", "hello", []string{"Content-MD5", "nope"}, 400, "InvalidDigest"},
		{"metadata too large", "PUT", "/bk1/k", "x", []string{"x-amz-meta-big", strings.Repeat("m", 2048)}, 400, "MetadataTooLarge"},
		{"key too long", "PUT", "/bk1/" + strings.Repeat("k", 1025), "x", nil, 400, "KeyTooLongError"},
		{"malformed versioning xml", "PUT", "/bk1?versioning", "<Versioning", nil, 400, "MalformedXML"},
		{"bad version id", "GET", "/bk1/k?versionId=zzz", "", nil, 400, "InvalidArgument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, s)
		})
	}
	// Nothing was written by the failed PUTs.
	s.mustDo(404, "GET", "/bk1/k", nil)
	// A good Content-MD5 passes.
	sum := md5.Sum([]byte("hello"))
	s.put("/bk1/k", "hello", "Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
}

func TestBuckets(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("zeta")
	s.bucket("alpha")
	r := s.mustDo(200, "GET", "/", nil)
	if i, j := bytes.Index(r.Body, []byte("alpha")), bytes.Index(r.Body, []byte("zeta")); i < 0 || j < i {
		t.Fatalf("list buckets: %s", r.Body)
	}
	s.mustDo(200, "HEAD", "/alpha", nil)
	// Re-creating one's own bucket: 200 in us-east-1 (the default region),
	// as AWS answers there; 409 BucketAlreadyOwnedByYou in other regions.
	s.put("/alpha/keep", "v")
	s.mustDo(200, "PUT", "/alpha", nil)
	s.mustDo(200, "GET", "/alpha/keep", nil)
	eu := newTestServer(t, &Options{Anonymous: true, Region: "eu-west-1"})
	eu.bucket("mine")
	if r := eu.do("PUT", "/mine", nil); r.Status != 409 || r.err().Code != "BucketAlreadyOwnedByYou" {
		t.Fatalf("re-create outside us-east-1: %d %s", r.Status, r.Body)
	}
	s.mustDo(204, "DELETE", "/alpha/keep", nil)
	s.mustDo(404, "HEAD", "/missing", nil)
	s.put("/alpha/k", "v")
	if r := s.mustDo(409, "DELETE", "/alpha", nil); r.err().Code != "BucketNotEmpty" {
		t.Fatalf("%s", r.Body)
	}
	s.mustDo(204, "DELETE", "/alpha/k", nil)
	s.mustDo(204, "DELETE", "/alpha", nil)
	s.mustDo(404, "HEAD", "/alpha", nil)
	if r := s.mustDo(200, "GET", "/zeta?location", nil); !bytes.Contains(r.Body, []byte("LocationConstraint")) {
		t.Fatalf("location: %s", r.Body)
	}
}

func TestRangeReads(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("bk1")
	small := "0123456789"
	big := strings.Repeat("abcdefghij", (inlineMax/10)+100)
	s.put("/bk1/small", small)
	s.put("/bk1/big", big)
	for _, tc := range []struct {
		key, body, rng string
		status         int
		want, cr       string
	}{
		{"small", small, "bytes=2-4", 206, "234", "bytes 2-4/10"},
		{"small", small, "bytes=-3", 206, "789", "bytes 7-9/10"},
		{"small", small, "bytes=8-", 206, "89", "bytes 8-9/10"},
		{"small", small, "bytes=0-100", 206, small, "bytes 0-9/10"},
		{"small", small, "bytes=10-", 416, "", "bytes */10"},
		{"small", small, "bytes=x", 200, small, ""},
		{"big", big, "bytes=5-14", 206, big[5:15], fmt.Sprintf("bytes 5-14/%d", len(big))},
		{"big", big, "bytes=-5", 206, big[len(big)-5:], fmt.Sprintf("bytes %d-%d/%d", len(big)-5, len(big)-1, len(big))},
	} {
		r := s.do("GET", "/bk1/"+tc.key, nil, "Range", tc.rng)
		if r.Status != tc.status || r.Header.Get("Content-Range") != tc.cr {
			t.Fatalf("%s %s: %d %v", tc.key, tc.rng, r.Status, r.Header)
		}
		if tc.status == 416 {
			if r.err().Code != "InvalidRange" {
				t.Fatalf("416 body %s", r.Body)
			}
			continue
		}
		if string(r.Body) != tc.want {
			t.Fatalf("%s %s: body %q", tc.key, tc.rng, r.Body)
		}
	}
}

// TestPutConditionMatrixHTTP runs every row of the write-outcome table
// (docs/wire-s3.md, "Conditional requests") over real HTTP.
func TestPutConditionMatrixHTTP(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("plain")
	s.versionedBucket("vers")
	type row struct {
		name   string
		setup  string // "absent", "present", "marker" (versioned bucket)
		hdr    []string
		status int
		code   string
		cond   string
		header string
		addMsg string
		errKey bool
	}
	cur := md5ETag("old")
	rows := []row{
		{"INM * absent", "absent", []string{"If-None-Match", "*"}, 200, "", "", "", "", false},
		{"INM * present", "present", []string{"If-None-Match", "*"}, 412, "PreconditionFailed", "If-None-Match", "", "", false},
		{"INM * over delete marker", "marker", []string{"If-None-Match", "*"}, 200, "", "", "", "", false},
		{"INM etag", "present", []string{"If-None-Match", cur}, 501, "NotImplemented", "", "If-None-Match", addINM, false},
		{"IM equal", "present", []string{"If-Match", cur}, 200, "", "", "", "", false},
		{"IM equal unquoted", "present", []string{"If-Match", strings.Trim(cur, `"`)}, 200, "", "", "", "", false},
		{"IM differs", "present", []string{"If-Match", md5ETag("other")}, 412, "PreconditionFailed", "If-Match", "", "", false},
		{"IM absent", "absent", []string{"If-Match", cur}, 404, "NoSuchKey", "", "", "", true},
		{"IM malformed absent", "absent", []string{"If-Match", "not-an-etag"}, 404, "NoSuchKey", "", "", "", true},
		{"IM over delete marker", "marker", []string{"If-Match", cur}, 404, "NoSuchKey", "", "", "", true},
		{"IM *", "present", []string{"If-Match", "*"}, 501, "NotImplemented", "", "If-Match", addIM, false},
		{"both", "present", []string{"If-Match", cur, "If-None-Match", "*"}, 501, "NotImplemented", "", "If-Match,If-None-Match", addTwo, false},
	}
	for i, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("k%d", i)
			path := s.condKey(tc.setup, key)
			before := s.do("GET", path, nil)
			r := s.do("PUT", path, []byte("new"), tc.hdr...)
			wantWriteAnswer(t, r, key, tc.status, tc.code, tc.cond, tc.header, tc.addMsg, tc.errKey)
			after := s.do("GET", path, nil)
			if tc.status == 200 {
				if string(after.Body) != "new" {
					t.Fatalf("write did not land: %d %q", after.Status, after.Body)
				}
			} else if after.Status != before.Status || (after.Status == 200 && !bytes.Equal(after.Body, before.Body)) {
				t.Fatalf("failed write changed the key: %d %q", after.Status, after.Body)
			}
		})
	}
}

// TestDeleteConditionMatrixHTTP runs the DeleteObject table (docs/wire-s3.md) over HTTP.
func TestDeleteConditionMatrixHTTP(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("plain")
	s.versionedBucket("vers")
	cur := md5ETag("v")
	rows := []struct {
		name         string
		bucket       string
		setup        string
		path, hdrKey string
		hdrVal       string
		status       int
		code, cond   string
		header       string
	}{
		{"IM current", "plain", "present", "", "If-Match", cur, 204, "", "", ""},
		{"IM *", "plain", "present", "", "If-Match", "*", 204, "", "", ""},
		{"IM current unquoted", "plain", "present", "", "If-Match", strings.Trim(cur, `"`), 204, "", "", ""},
		{"IM differs", "plain", "present", "", "If-Match", md5ETag("x"), 412, "PreconditionFailed", "If-Match", ""},
		{"never written", "plain", "absent", "", "If-Match", cur, 404, "NoSuchKey", "", ""},
		{"never written versioned *", "vers", "absent", "", "If-Match", "*", 404, "NoSuchKey", "", ""},
		{"current is delete marker", "vers", "marker", "", "If-Match", "*", 404, "NoSuchKey", "", ""},
		{"versionId + If-Match", "vers", "present", "?versionId=null", "If-Match", cur, 501, "NotImplemented", "", "If-Match"},
		{"if-match-size", "plain", "present", "", "x-amz-if-match-size", "1", 501, "NotImplemented", "", "x-amz-if-match-size"},
		{"if-match-last-modified-time", "plain", "present", "", "x-amz-if-match-last-modified-time", "Wed, 01 Jan 2025 00:00:00 GMT", 501, "NotImplemented", "", "x-amz-if-match-last-modified-time"},
	}
	for i, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			path := fmt.Sprintf("/%s/k%d", tc.bucket, i)
			switch tc.setup {
			case "present":
				s.put(path, "v")
			case "marker":
				s.put(path, "v")
				s.mustDo(204, "DELETE", path, nil)
			}
			r := s.do("DELETE", path+tc.path, nil, tc.hdrKey, tc.hdrVal)
			e := r.err()
			if r.Status != tc.status || e.Code != tc.code || e.Condition != tc.cond || e.Header != tc.header {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
			g := s.do("GET", path, nil)
			switch {
			case tc.status == 204 && g.Status != 404:
				t.Fatalf("delete did not land")
			case tc.status != 204 && tc.setup == "present" && g.Status != 200:
				t.Fatalf("failed delete removed the key")
			}
		})
	}
}

// TestGetConditionsHTTP is the GET/HEAD ladder (docs/wire-s3.md) over HTTP.
func TestGetConditionsHTTP(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("bk1")
	et := s.put("/bk1/k", "body")
	lm := s.mustDo(200, "HEAD", "/bk1/k", nil).Header.Get("Last-Modified")
	lmT, _ := http.ParseTime(lm)
	past := lmT.Add(-time.Hour).Format(http.TimeFormat)
	later := lmT.Add(time.Second).Format(http.TimeFormat)
	future := time.Now().Add(24 * time.Hour).UTC().Format(http.TimeFormat)
	for _, method := range []string{"GET", "HEAD"} {
		for _, tc := range []struct {
			name   string
			hdr    []string
			status int
			cond   string
		}{
			{"all four", []string{"If-Match", `"x"`, "If-Unmodified-Since", past, "If-None-Match", et, "If-Modified-Since", later}, 412, "If-Match"},
			{"IUS", []string{"If-Unmodified-Since", past, "If-None-Match", et, "If-Modified-Since", later}, 412, "If-Unmodified-Since"},
			{"INM", []string{"If-None-Match", et, "If-Modified-Since", later}, 304, ""},
			{"INM unquoted", []string{"If-None-Match", strings.Trim(et, `"`)}, 304, ""},
			{"IMS equal", []string{"If-Modified-Since", lm}, 304, ""},
			{"IMS future ignored", []string{"If-Modified-Since", future}, 200, ""},
			{"IUS equal", []string{"If-Unmodified-Since", lm}, 200, ""},
			{"IM true + IUS false", []string{"If-Match", et, "If-Unmodified-Since", past}, 200, ""},
		} {
			t.Run(method+"/"+tc.name, func(t *testing.T) {
				r := s.do(method, "/bk1/k", nil, tc.hdr...)
				if r.Status != tc.status {
					t.Fatalf("got %d %s", r.Status, r.Body)
				}
				if tc.status == 304 && (r.Header.Get("ETag") != et || len(r.Body) != 0) {
					t.Fatalf("304 must carry ETag and no body: %v %q", r.Header, r.Body)
				}
				if tc.status == 412 && method == "GET" && r.err().Condition != tc.cond {
					t.Fatalf("condition %s", r.Body)
				}
				if method == "HEAD" && len(r.Body) != 0 {
					t.Fatal("HEAD with a body")
				}
			})
		}
	}
}

// TestConcurrentCreateIfAbsent: of 32 concurrent If-None-Match: * PUTs
// over HTTP, exactly one wins; the key holds the winner's body, and the
// losers' blobs are gone.
func TestConcurrentCreateIfAbsent(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("race")
	const n = 32
	for round, size := range []int{100, inlineMax + 1} {
		key := fmt.Sprintf("/race/key%d", round)
		var wg sync.WaitGroup
		status := make([]int, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				body := bytes.Repeat([]byte{byte('a' + i%26)}, size)
				body = append(body, fmt.Sprintf("writer-%d", i)...)
				req, _ := http.NewRequest("PUT", s.srv.URL+key, bytes.NewReader(body))
				req.Header.Set("If-None-Match", "*")
				res, err := s.srv.Client().Do(req)
				if err != nil {
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				status[i] = res.StatusCode
			})
		}
		close(start)
		wg.Wait()
		winners, winner := 0, -1
		for i, st := range status {
			switch st {
			case 200:
				winners++
				winner = i
			case 412:
			default:
				t.Fatalf("writer %d: status %d", i, st)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1 (%v)", round, winners, status)
		}
		got := s.mustDo(200, "GET", key, nil).Body
		if !bytes.HasSuffix(got, []byte(fmt.Sprintf("writer-%d", winner))) {
			t.Fatalf("key holds %q..., not the winner's body", got[len(got)-12:])
		}
	}
	if n := countBlobs(t, s); n != 1 {
		t.Fatalf("%d blob files remain, want 1 (the winner of the large round)", n)
	}
}

func TestAuthRequired(t *testing.T) {
	s := newTestServer(t, &Options{})
	r := s.do("GET", "/", nil)
	if r.Status != 403 || r.err().Code != "AccessDenied" {
		t.Fatalf("no credentials configured: %d %s", r.Status, r.Body)
	}
	s2 := newTestServer(t, &Options{Auth: fakeAuth{}})
	r = s2.do("GET", "/", nil)
	if r.Status != 403 || r.err().Code != "SignatureDoesNotMatch" {
		t.Fatalf("verifier error: %d %s", r.Status, r.Body)
	}
	s2.mustDo(200, "GET", "/", nil, "Authorization", "ok")
}

type fakeAuth struct{}

type sigErr struct{}

func (sigErr) Error() string       { return "The request signature we calculated does not match" }
func (sigErr) S3ErrorCode() string { return "SignatureDoesNotMatch" }
func (sigErr) HTTPStatus() int     { return 403 }

func (fakeAuth) Verify(r *http.Request) (string, io.ReadCloser, error) {
	if r.Header.Get("Authorization") == "ok" {
		return "tester", r.Body, nil
	}
	return "", nil, fmt.Errorf("verify: %w", error(sigErr{}))
}

var _ = errors.New

// TestGetEmptyPart: GET ?partNumber=N of an empty (last) part answers an
// empty 206, not the whole object, so a downloader that fetches by part
// reassembles the object exactly.
func TestGetEmptyPart(t *testing.T) {
	s := newTestServer(t, nil) // minimum part size 5
	s.bucket("ept")
	m := s.createMPU("/ept/obj")
	m.part(1, "abcde")
	m.part(2, "")
	if r := m.complete(nil, 1, 2); r.Status != 200 {
		t.Fatalf("complete: %d %s", r.Status, r.Body)
	}
	var whole []byte
	for n := 1; n <= 2; n++ {
		for _, method := range []string{"GET", "HEAD"} {
			r := s.do(method, fmt.Sprintf("/ept/obj?partNumber=%d", n), nil)
			if r.Status != 206 || r.Header.Get("x-amz-mp-parts-count") != "2" {
				t.Fatalf("%s part %d: %d %q %s", method, n, r.Status, r.Header.Get("x-amz-mp-parts-count"), r.Body)
			}
			wantLen := map[int]string{1: "5", 2: "0"}[n]
			if r.Header.Get("Content-Length") != wantLen {
				t.Fatalf("%s part %d: Content-Length %q, want %s", method, n, r.Header.Get("Content-Length"), wantLen)
			}
			if method == "GET" {
				whole = append(whole, r.Body...)
			}
		}
	}
	if string(whole) != "abcde" {
		t.Fatalf("reassembled %q", whole)
	}
}
