package testutil

import (
	"regexp"
	"testing"
)

func TestRandomNameIsAValidBucketNameAndFresh(t *testing.T) {
	valid := regexp.MustCompile(`^lk-[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for range 100 {
		n := RandomName("lk-")
		if !valid.MatchString(n) {
			t.Fatalf("RandomName = %q, want lk- and 26 of [a-z2-7]", n)
		}
		if seen[n] {
			t.Fatalf("RandomName repeated %q", n)
		}
		seen[n] = true
	}
}
