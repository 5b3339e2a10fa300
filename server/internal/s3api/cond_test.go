package s3api

import (
	"net/http"
	"testing"
	"time"
)

// errShape is what the matrix asserts of an *Error.
type errShape struct {
	Status            int
	Code              string
	Condition, Header string
	Additional        string
	Key               string
}

func shape(e *Error) errShape {
	if e == nil {
		return errShape{Status: 200}
	}
	return errShape{e.Status, e.Code, e.Condition, e.Header, e.AdditionalMessage, e.Key}
}

const (
	addIM  = "We don't accept the provided value of If-Match header for this API"
	addINM = "We don't accept the provided value of If-None-Match header for this API"
	addTwo = "Multiple conditional request headers present in the request"
)

// TestWriteConditionMatrix is the write-outcome table of docs/wire-s3.md
// row by row, plus its multipart snapshot table ("Concurrent writes").
func TestWriteConditionMatrix(t *testing.T) {
	etag := `"0cc175b9c0f1b6a831c399e269772661"`
	snap := func(n uint64) *uint64 { return &n }
	absent := current{}
	present := current{Exists: true, ETag: etag, Mod: 5}
	cases := []struct {
		name          string
		im, inm       string
		hasIM, hasINM bool
		cur           current
		snapshot      *uint64
		want          errShape
	}{
		{name: "If-None-Match */absent", inm: "*", hasINM: true, cur: absent, want: errShape{Status: 200}},
		{name: "If-None-Match */exists", inm: "*", hasINM: true, cur: present, want: errShape{412, "PreconditionFailed", "If-None-Match", "", "", ""}},
		{name: "If-None-Match */delete marker counts as absent", inm: "*", hasINM: true, cur: current{Mod: 9}, want: errShape{Status: 200}},
		{name: "If-None-Match etag/501", inm: etag, hasINM: true, cur: present, want: errShape{501, "NotImplemented", "", "If-None-Match", addINM, ""}},
		{name: "If-None-Match etag on absent/501", inm: etag, hasINM: true, cur: absent, want: errShape{501, "NotImplemented", "", "If-None-Match", addINM, ""}},
		{name: "If-None-Match empty/501", inm: "", hasINM: true, cur: absent, want: errShape{501, "NotImplemented", "", "If-None-Match", addINM, ""}},
		{name: "If-Match equal", im: etag, hasIM: true, cur: present, want: errShape{Status: 200}},
		{name: "If-Match equal unquoted", im: "0cc175b9c0f1b6a831c399e269772661", hasIM: true, cur: present, want: errShape{Status: 200}},
		{name: "If-Match differs/412", im: `"ffff"`, hasIM: true, cur: present, want: errShape{412, "PreconditionFailed", "If-Match", "", "", ""}},
		{name: "If-Match absent/404", im: etag, hasIM: true, cur: absent, want: errShape{404, "NoSuchKey", "", "", "", "k"}},
		{name: "If-Match malformed absent/404", im: "garbage", hasIM: true, cur: absent, want: errShape{404, "NoSuchKey", "", "", "", "k"}},
		{name: "If-Match over delete marker/404", im: etag, hasIM: true, cur: current{Mod: 7}, want: errShape{404, "NoSuchKey", "", "", "", "k"}},
		{name: "If-Match */501", im: "*", hasIM: true, cur: present, want: errShape{501, "NotImplemented", "", "If-Match", addIM, ""}},
		{name: "If-Match * absent/501 beats 404", im: "*", hasIM: true, cur: absent, want: errShape{501, "NotImplemented", "", "If-Match", addIM, ""}},
		{name: "both headers/501", im: etag, inm: "*", hasIM: true, hasINM: true, cur: present, want: errShape{501, "NotImplemented", "", "If-Match,If-None-Match", addTwo, ""}},
		{name: "unconditional", cur: present, want: errShape{Status: 200}},
		// The multipart snapshot table: snapshot is the key's Mod at create.
		{name: "mpu/nothing changed, key existed, INM", inm: "*", hasINM: true, cur: present, snapshot: snap(5), want: errShape{412, "PreconditionFailed", "If-None-Match", "", "", ""}},
		{name: "mpu/key deleted, INM/409", inm: "*", hasINM: true, cur: current{Mod: 6}, snapshot: snap(5), want: errShape{409, "ConditionalRequestConflict", "If-None-Match", "", "", "k"}},
		{name: "mpu/another PUT created key, INM/412", inm: "*", hasINM: true, cur: present, snapshot: snap(0), want: errShape{412, "PreconditionFailed", "If-None-Match", "", "", ""}},
		{name: "mpu/PUT new content, IM old/412", im: `"old"`, hasIM: true, cur: present, snapshot: snap(4), want: errShape{412, "PreconditionFailed", "If-Match", "", "", ""}},
		{name: "mpu/PUT new content, IM current/409", im: etag, hasIM: true, cur: present, snapshot: snap(4), want: errShape{409, "ConditionalRequestConflict", "If-Match", "", "", "k"}},
		{name: "mpu/DELETE, IM/404", im: etag, hasIM: true, cur: current{Mod: 6}, snapshot: snap(5), want: errShape{404, "NoSuchKey", "", "", "", "k"}},
		{name: "mpu/unchanged, IM current", im: etag, hasIM: true, cur: present, snapshot: snap(5), want: errShape{Status: 200}},
		{name: "mpu/unchanged absent, INM", inm: "*", hasINM: true, cur: absent, snapshot: snap(0), want: errShape{Status: 200}},
		{name: "mpu/changed but unconditional", cur: present, snapshot: snap(1), want: errShape{Status: 200}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, e := decideWriteHeaders(tc.im, tc.hasIM, tc.inm, tc.hasINM)
			if e == nil {
				e = c.check("k", tc.cur, tc.snapshot)
			}
			if got := shape(e); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDeleteConditionMatrix is the DeleteObject table (docs/wire-s3.md, "Deletes").
func TestDeleteConditionMatrix(t *testing.T) {
	etag := `"abc"`
	present := current{Exists: true, ETag: etag}
	cases := []struct {
		name            string
		size, lmt, hasI bool
		im, vid         string
		cur             current
		want            errShape
	}{
		{name: "If-Match current", hasI: true, im: etag, cur: present, want: errShape{Status: 200}},
		{name: "If-Match *", hasI: true, im: "*", cur: present, want: errShape{Status: 200}},
		{name: "If-Match differs/412", hasI: true, im: `"zzz"`, cur: present, want: errShape{412, "PreconditionFailed", "If-Match", "", "", ""}},
		{name: "never written/404", hasI: true, im: etag, cur: current{}, want: errShape{404, "NoSuchKey", "", "", "", "k"}},
		{name: "never written, */404", hasI: true, im: "*", cur: current{}, want: errShape{404, "NoSuchKey", "", "", "", "k"}},
		{name: "delete marker/404", hasI: true, im: "*", cur: current{Mod: 3}, want: errShape{404, "NoSuchKey", "", "", "", "k"}},
		{name: "versionId + If-Match/501", hasI: true, im: etag, vid: "null", cur: present, want: errShape{501, "NotImplemented", "", "If-Match", "", ""}},
		{name: "if-match-size/501", size: true, cur: present, want: errShape{501, "NotImplemented", "", "x-amz-if-match-size", "", ""}},
		{name: "both directory headers/501 names last-modified-time", size: true, lmt: true, cur: present, want: errShape{501, "NotImplemented", "", "x-amz-if-match-last-modified-time", "", ""}},
		{name: "unconditional missing/204", cur: current{}, want: errShape{Status: 200}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, e := decideDeleteHeaders(tc.size, tc.lmt, tc.im, tc.hasI, tc.vid)
			if e == nil {
				e = c.check("k", tc.cur)
			}
			if got := shape(e); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestReadConditionLadder is the GET/HEAD ladder (docs/wire-s3.md, "GET and HEAD").
func TestReadConditionLadder(t *testing.T) {
	etag := `"abc"`
	lm := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	now := lm.Add(time.Hour)
	before, after := lm.Add(-time.Minute), lm.Add(time.Minute)
	future := now.Add(time.Hour)
	lmSec := lm.Truncate(time.Second)
	type rc = readCond
	cases := []struct {
		name string
		c    readCond
		want int
		cond string
	}{
		{"all four, If-Match false wins", rc{IfMatch: `"x"`, HasIfMatch: true, IfNoneMatch: etag, HasIfNoneMatch: true, IfModifiedSince: after, IfUnmodifiedSince: before}, 412, "If-Match"},
		{"IUS false", rc{IfNoneMatch: etag, HasIfNoneMatch: true, IfModifiedSince: after, IfUnmodifiedSince: before}, 412, "If-Unmodified-Since"},
		{"INM matches", rc{IfNoneMatch: etag, HasIfNoneMatch: true, IfModifiedSince: after}, 304, ""},
		{"IMS not newer", rc{IfModifiedSince: after}, 304, ""},
		{"If-Match true + IUS false → 200", rc{IfMatch: etag, HasIfMatch: true, IfUnmodifiedSince: before}, 200, ""},
		{"INM matching + IMS true → 304", rc{IfNoneMatch: etag, HasIfNoneMatch: true, IfModifiedSince: before}, 304, ""},
		{"INM unquoted matches", rc{IfNoneMatch: "abc", HasIfNoneMatch: true}, 304, ""},
		{"INM differs → 200 despite IMS", rc{IfNoneMatch: `"x"`, HasIfNoneMatch: true, IfModifiedSince: after}, 200, ""},
		{"IMS in the future ignored", rc{IfModifiedSince: future}, 200, ""},
		{"IUS equal to Last-Modified → 200", rc{IfUnmodifiedSince: lmSec}, 200, ""},
		{"IMS equal to Last-Modified → 304", rc{IfModifiedSince: lmSec}, 304, ""},
		{"IMS older → 200", rc{IfModifiedSince: before}, 200, ""},
		{"If-Match equal → 200", rc{IfMatch: etag, HasIfMatch: true}, 200, ""},
		{"none", rc{}, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.c.checkRead(etag, lm, now)
			got := shape(e)
			if got.Status != tc.want || got.Condition != tc.cond {
				t.Fatalf("got %+v, want %d %q", got, tc.want, tc.cond)
			}
			if tc.want == 304 && (e.Headers.Get("ETag") != etag || e.Headers.Get("Last-Modified") == "") {
				t.Fatalf("304 without ETag/Last-Modified: %v", e.Headers)
			}
		})
	}
}

func TestCopySourceConditions(t *testing.T) {
	etag := `"abc"`
	lm := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := lm.Add(time.Hour)
	cases := []struct {
		name string
		c    readCond
		cond string // "" = passes
	}{
		{"if-match differs", readCond{IfMatch: `"x"`, HasIfMatch: true}, "x-amz-copy-source-If-Match"},
		{"if-match equal + ius false passes", readCond{IfMatch: etag, HasIfMatch: true, IfUnmodifiedSince: lm.Add(-time.Hour)}, ""},
		{"ius false", readCond{IfUnmodifiedSince: lm.Add(-time.Hour)}, "x-amz-copy-source-If-Unmodified-Since"},
		{"if-none-match matches → 412", readCond{IfNoneMatch: etag, HasIfNoneMatch: true}, "x-amz-copy-source-If-None-Match"},
		{"if-none-match differs passes", readCond{IfNoneMatch: `"x"`, HasIfNoneMatch: true}, ""},
		{"ims not modified", readCond{IfModifiedSince: lm.Add(time.Minute)}, "x-amz-copy-source-If-Modified-Since"},
		{"ims modified passes", readCond{IfModifiedSince: lm.Add(-time.Minute)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.c.checkCopySource(etag, lm, now)
			if tc.cond == "" {
				if e != nil {
					t.Fatalf("unexpected %v", e)
				}
				return
			}
			if e == nil || e.Status != http.StatusPreconditionFailed || e.Condition != tc.cond {
				t.Fatalf("got %+v, want 412 %s", shape(e), tc.cond)
			}
		})
	}
}

func TestParseRange(t *testing.T) {
	cases := []struct {
		h       string
		size    int64
		want    byteRange
		partial bool
		invalid bool
	}{
		{"bytes=0-0", 10, byteRange{0, 0}, true, false},
		{"bytes=2-5", 10, byteRange{2, 5}, true, false},
		{"bytes=2-", 10, byteRange{2, 9}, true, false},
		{"bytes=-3", 10, byteRange{7, 9}, true, false},
		{"bytes=-30", 10, byteRange{0, 9}, true, false},
		{"bytes=5-100", 10, byteRange{5, 9}, true, false},
		{"bytes=10-", 10, byteRange{}, false, true},
		{"bytes=10-20", 10, byteRange{}, false, true},
		{"bytes=0-", 0, byteRange{}, false, true},
		{"bytes=-0", 10, byteRange{}, false, true},
		{"bytes=5-2", 10, byteRange{}, false, false},
		{"bytes=a-b", 10, byteRange{}, false, false},
		{"items=0-1", 10, byteRange{}, false, false},
		{"bytes=0-1,3-4", 10, byteRange{}, false, false},
		{"", 10, byteRange{}, false, false},
	}
	for _, tc := range cases {
		got, partial, err := parseRange(tc.h, tc.size)
		if (err != nil) != tc.invalid || partial != tc.partial || (partial && got != tc.want) {
			t.Errorf("parseRange(%q, %d) = %v %v %v", tc.h, tc.size, got, partial, err)
		}
		if err != nil && err.Headers.Get("Content-Range") == "" {
			t.Errorf("416 without Content-Range")
		}
	}
}

func TestMultipartETag(t *testing.T) {
	// One part whose MD5 is that of the empty string: AWS's ETag for it is
	// md5 of that MD5's 16 bytes, then -1.
	got, err := multipartETag([]string{`"d41d8cd98f00b204e9800998ecf8427e"`})
	if err != nil {
		t.Fatal(err)
	}
	if got != `"59adb24ef3cdbe0297f05b395827453f-1"` {
		t.Fatalf("got %s", got)
	}
	if _, err := multipartETag([]string{"zz"}); err == nil {
		t.Fatal("bad part etag accepted")
	}
}

func TestVersionIDsSortNewestFirst(t *testing.T) {
	a, b := versionID(5), versionID(6)
	if !(b < a) {
		t.Fatalf("%s !< %s", b, a)
	}
	if idx, ok := parseVersionID(a); !ok || idx != 5 {
		t.Fatalf("round trip %s → %d %v", a, idx, ok)
	}
	for _, bad := range []string{"", "xyz", "ffffffffffffffffff", "gggggggggggggggg"} {
		if _, ok := parseVersionID(bad); ok {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestBucketNames(t *testing.T) {
	for _, ok := range []string{"abc", "my-bucket.1", "a1b", "123"} {
		if !validBucketName(ok) {
			t.Errorf("rejected %q", ok)
		}
	}
	for _, bad := range []string{"ab", "ABC", "a..b", "-ab", "ab-", "192.168.1.1", "xn--abc", "a_b", string(make([]byte, 64))} {
		if validBucketName(bad) {
			t.Errorf("accepted %q", bad)
		}
	}
}
