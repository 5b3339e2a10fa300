// Package enginetest gives the tests of the server's parts a throwaway
// engine: in a fresh temporary directory, without fsync (a test cannot
// lose power), closed when the test ends. Tests of durability open the
// engine themselves, with fsync on.
//
// Test code only: no package's non-test code imports it.
package enginetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// Open returns a new engine over tb.TempDir() with Options.NoSync set. It
// is closed by tb.Cleanup, after every cleanup registered later (so a
// handler over it is closed first); closing it earlier is allowed.
func Open(tb testing.TB) *engine.Engine {
	tb.Helper()
	e, err := engine.Open(tb.TempDir(), &engine.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// Blobs returns the paths of the committed blob files of e (the files of
// its data directory's blobs/, not the staging tmp/ in it), in name order.
func Blobs(tb testing.TB, e *engine.Engine) []string {
	tb.Helper()
	dir := filepath.Join(e.Dir(), "blobs")
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var paths []string
	for _, ent := range ents {
		if !ent.IsDir() {
			paths = append(paths, filepath.Join(dir, ent.Name()))
		}
	}
	return paths
}
