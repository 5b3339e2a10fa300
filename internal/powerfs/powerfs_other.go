//go:build !linux

package powerfs

import (
	"testing"

	"github.com/latchkey/latchkey/internal/testutil"
)

// FS is one mounted power-loss file system (Linux only).
type FS struct{}

// Mount skips the test (fails it under CI=true): powerfs needs Linux.
func Mount(t testing.TB, src string, opts Options) *FS {
	t.Helper()
	testutil.Unavailable(t, "powerfs: needs Linux")
	return nil
}

func (p *FS) Dir() string                  { return "" }
func (p *FS) Syncs() int                   { return 0 }
func (p *FS) Cut() bool                    { return true }
func (p *FS) IsCut() bool                  { return true }
func (p *FS) Unmount()                     {}
func (p *FS) Materialize(dst string) error { return nil }
func (p *FS) Image(t testing.TB) string    { return "" }
