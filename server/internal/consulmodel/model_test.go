package consulmodel

import (
	"hash/maphash"
	"testing"
)

// TestContentionDecays: a refusal marks a key contended; wins take it back
// to the plain path after contendedScore of them, and a refusal between
// wins keeps it contended.
func TestContentionDecays(t *testing.T) {
	c := contention{seed: maphash.MakeSeed()}
	if c.marked("k") {
		t.Fatal("a fresh key is contended")
	}
	c.mark("k", true)
	for i := range contendedScore - 1 {
		c.mark("k", false)
		if !c.marked("k") {
			t.Fatalf("not contended after %d wins", i+1)
		}
		if i == 5 {
			c.mark("k", true) // a hot key: a refusal between wins
		}
	}
	for range contendedScore {
		c.mark("k", false)
	}
	if c.marked("k") {
		t.Fatalf("still contended after %d wins in a row", contendedScore)
	}
}
