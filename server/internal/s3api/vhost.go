package s3api

import (
	"net"
	"strings"
)

// Virtual-hosted-style addressing: with Options.Domain set, a request
// whose Host is BUCKET.DOMAIN (any port) addresses BUCKET and its whole
// path is the key; a Host of DOMAIN itself, or any other host, is path
// style. SigV4 signs the Host and path as sent, so the verifier needs
// nothing of this.

// BucketFromHost returns the bucket a Host header names under domain
// (case-insensitive, port ignored), or ok=false for path style. The bucket
// is not validated here.
func BucketFromHost(host, domain string) (bucket string, ok bool) {
	if domain == "" {
		return "", false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	domain = strings.ToLower(strings.Trim(domain, "."))
	b, found := strings.CutSuffix(host, "."+domain)
	if !found || b == "" {
		return "", false
	}
	return b, true
}
