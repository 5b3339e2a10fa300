package s3store

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestRequestURL: an endpoint is addressed path-style below its own path;
// AWS is virtual-hosted for a bucket name that is one DNS label and
// path-style otherwise (a dotted name would not match the certificate),
// in the region's partition; every key byte but RFC 3986's unreserved
// characters and '/' is escaped, as SigV4's canonical URI wants it.
func TestRequestURL(t *testing.T) {
	cases := []struct {
		region, endpoint, bucket, object string
		q                                url.Values
		want                             string
	}{
		{"us-east-1", "http://127.0.0.1:7070", "b", "k", nil, "http://127.0.0.1:7070/b/k"},
		{"us-east-1", "http://127.0.0.1:7070/", "b", "", url.Values{"list-type": {"2"}, "prefix": {"a b"}}, "http://127.0.0.1:7070/b?list-type=2&prefix=a%20b"},
		{"us-east-1", "https://gw.example/s3/", "b", "a/b c", nil, "https://gw.example/s3/b/a/b%20c"},
		{"eu-west-1", "", "my-bucket", "x/y", nil, "https://my-bucket.s3.eu-west-1.amazonaws.com/x/y"},
		{"eu-west-1", "", "my-bucket", "", nil, "https://my-bucket.s3.eu-west-1.amazonaws.com/"},
		{"eu-west-1", "", "my.bucket", "k", nil, "https://s3.eu-west-1.amazonaws.com/my.bucket/k"},
		{"cn-north-1", "", "my-bucket", "k", nil, "https://my-bucket.s3.cn-north-1.amazonaws.com.cn/k"},
		{"us-east-1", "http://h", "b", "ü+%?#~._-!*'()", nil, "http://h/b/%C3%BC%2B%25%3F%23~._-%21%2A%27%28%29"},
	}
	for _, c := range cases {
		cl, err := newClient(nil, nil, c.region, c.endpoint, c.bucket)
		if err != nil {
			t.Fatal(err)
		}
		if got := cl.url(c.object, c.q).String(); got != c.want {
			t.Errorf("url(%q, %q) at %q = %s, want %s", c.bucket, c.object, c.endpoint, got, c.want)
		}
	}
	for _, bad := range []string{"ftp://h", "127.0.0.1:7070", "http://"} {
		if _, err := newClient(nil, nil, "us-east-1", bad, "b"); err == nil {
			t.Errorf("endpoint %q accepted", bad)
		}
	}
}

// TestGzipObjectReadAsStored: an object stored with Content-Encoding:
// gzip by another tool reads as its stored bytes; net/http would
// otherwise ask for gzip itself and unpack it behind our back.
func TestGzipObjectReadAsStored(t *testing.T) {
	stored := gzipped(t, "value")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Header().Set("ETag", `"e"`)
		w.Write(stored)
	}))
	defer srv.Close()
	c, err := newClient(srv.Client(), nil, "us-east-1", srv.URL, "b")
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.getObject(context.Background(), "k", "")
	if err != nil {
		t.Fatal(err)
	}
	defer o.body.Close()
	got, _ := io.ReadAll(o.body)
	if !bytes.Equal(got, stored) {
		t.Fatalf("read %q, want the stored bytes %q", got, stored)
	}
}

func gzipped(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
