package hdrval

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
)

// TestValuesStayPut: every value handed out keeps its text however many
// come after it (across slabs and goroutines), is its own one-element
// slice, and appending to it leaves the slab alone.
func TestValuesStayPut(t *testing.T) {
	var p Slabs
	const goroutines, each = 4, 3 * perSlab
	got := make([][][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				got[g] = append(got[g], p.Uint(uint64(g*1000000+i)), p.Hex64(uint64(i)<<40|uint64(g)))
			}
		})
	}
	wg.Wait()
	for g := range goroutines {
		for i := range each {
			u, h := got[g][2*i], got[g][2*i+1]
			if len(u) != 1 || cap(u) != 1 || u[0] != strconv.Itoa(g*1000000+i) {
				t.Fatalf("Uint value %d of goroutine %d: %q (len %d cap %d)", i, g, u, len(u), cap(u))
			}
			if want := fmt.Sprintf("%016x", uint64(i)<<40|uint64(g)); len(h) != 1 || h[0] != want {
				t.Fatalf("Hex64 value %d of goroutine %d: %q, want %s", i, g, h, want)
			}
		}
	}
	v := p.Uint(7)
	w := append(v, "8")
	if next := p.Uint(9); v[0] != "7" || w[0] != "7" || next[0] != "9" {
		t.Fatalf("after an append: %q %q %q", v, w, next)
	}
	if s := p.Uint(math.MaxUint64)[0]; s != "18446744073709551615" {
		t.Fatalf("Uint(MaxUint64) = %s", s)
	}
	if s := p.Hex64(math.MaxUint64)[0]; s != "ffffffffffffffff" {
		t.Fatalf("Hex64(MaxUint64) = %s", s)
	}
}

// TestValuesShareAllocations: a value costs a small share of one
// allocation (a slab per perSlab values), not a string and a slice.
func TestValuesShareAllocations(t *testing.T) {
	var p Slabs
	n := uint64(0)
	if a := testing.AllocsPerRun(1000, func() { n++; p.Uint(n) }); a > 0.5 {
		t.Errorf("Uint: %.2f allocations per value; want a share of one slab", a)
	}
	if a := testing.AllocsPerRun(1000, func() { n++; p.Hex64(n) }); a > 0.5 {
		t.Errorf("Hex64: %.2f allocations per value; want a share of one slab", a)
	}
}
