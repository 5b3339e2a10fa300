package testutil

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once (as os/exec's copying goroutines and a
// test polling the output): every write is kept whole, and under -race
// nothing is reported.
func TestLockedBufferConcurrentWritesAndReads(t *testing.T) {
	var b LockedBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("line\n", 400) {
		t.Fatalf("got %d bytes, want 400 whole lines", len(got))
	}
}
