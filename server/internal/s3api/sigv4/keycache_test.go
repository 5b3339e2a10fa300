package sigv4

import (
	"bytes"
	"testing"
)

// TestKeyCacheDerivesPerSecretAndScope: a cached key is the one
// signingKey derives, for that secret and that scope only (a rotated
// secret or the next day's scope never gets a stale key), and the cache
// stays bounded.
func TestKeyCacheDerivesPerSecretAndScope(t *testing.T) {
	var c keyCache
	s1 := scope{date: "20260101", region: "us-east-1", service: "s3"}
	s2 := scope{date: "20260102", region: "us-east-1", service: "s3"}
	for i := 0; i < 2; i++ { // the second round is served from the cache
		for _, tc := range []struct {
			secret string
			s      scope
		}{{"secret-a", s1}, {"secret-b", s1}, {"secret-a", s2}} {
			if got, want := c.get(tc.secret, tc.s), signingKey(tc.secret, tc.s); !bytes.Equal(got, want) {
				t.Fatalf("round %d: key of (%s, %v) = %x, want %x", i, tc.secret, tc.s, got, want)
			}
		}
	}
	if bytes.Equal(c.get("secret-a", s1), c.get("secret-b", s1)) {
		t.Fatal("two secrets share a key")
	}
	for i := range maxCachedKeys * 3 {
		c.get(string(rune('a'+i%26))+string(rune(i)), s1)
	}
	if n := len(c.m); n > maxCachedKeys {
		t.Fatalf("cache holds %d keys, bound %d", n, maxCachedKeys)
	}
}
