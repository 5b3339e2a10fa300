package s3api

import "testing"

func TestBucketFromHost(t *testing.T) {
	for _, tc := range []struct {
		host, domain, bucket string
		ok                   bool
	}{
		{"b1.localhost:9000", "localhost", "b1", true},
		{"My.Bucket.S3.example.com", "s3.example.com", "my.bucket", true},
		{"b1.localhost.", "localhost", "b1", true},
		{"localhost:9000", "localhost", "", false},
		{"b1.other:9000", "localhost", "", false},
		{"xlocalhost", "localhost", "", false},
		{"b1.localhost", "", "", false},
		{"127.0.0.1:8500", "localhost", "", false},
	} {
		b, ok := BucketFromHost(tc.host, tc.domain)
		if b != tc.bucket || ok != tc.ok {
			t.Errorf("BucketFromHost(%q, %q) = %q, %v; want %q, %v", tc.host, tc.domain, b, ok, tc.bucket, tc.ok)
		}
	}
}
