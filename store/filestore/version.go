package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Versions are decimal numbers drawn from one persistent counter per
// directory. A process reserves a block of numbers by advancing the
// counter file durably (under locks/counter, written by rename and
// fsynced) before it hands any of them out, then uses the block from
// memory. So every version is unique in the directory for its lifetime:
// across keys, deletes, processes, crashes and restarts. A crash only
// skips the unused rest of a block. Versions are not ordered across
// processes, which the contract does not require.
//
// Blocks start small, so that short-lived processes (one CLI command)
// burn few numbers, and double up to maxBlock for busy ones.
const (
	firstBlock = 16
	maxBlock   = 1 << 16
)

type allocator struct {
	mu    sync.Mutex
	next  uint64 // next version to hand out
	limit uint64 // last version reserved; next > limit means none left
	block uint64
}

// newVersion returns a version never used before in this directory.
func (s *Store) newVersion(ctx context.Context) (uint64, error) {
	a := &s.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == 0 || a.next > a.limit {
		if err := s.reserve(ctx); err != nil {
			return 0, fmt.Errorf("reserve versions: %w", err)
		}
	}
	v := a.next
	a.next++
	return v, nil
}

// reserve advances the counter file by a block; s.alloc.mu is held.
func (s *Store) reserve(ctx context.Context) error {
	a := &s.alloc
	if a.block == 0 {
		a.block = firstBlock
	}
	l := []int{s.counterLock()}
	if err := s.acquire(ctx, l, true); err != nil {
		return err
	}
	defer s.release(l)
	var cur uint64
	b, err := os.ReadFile(filepath.Join(s.dir, counterFile))
	switch {
	case err == nil:
		cur, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, counterFile, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if cur > ^uint64(0)-a.block {
		return errors.New("version counter exhausted")
	}
	limit := cur + a.block
	if err := s.writeFileAtomic(s.dir, counterFile, []byte(strconv.FormatUint(limit, 10)+"\n")); err != nil {
		return err
	}
	a.next, a.limit = cur+1, limit
	a.block = min(a.block*2, maxBlock)
	return nil
}
