package filestore

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/store"
)

// List implements store.Store. It first finishes any dead transaction (so
// that no half of one shows), then reads the header of every value file in
// the buckets the prefix can match: the one bucket of the prefix's first
// segment when the prefix contains '/', every bucket otherwise. It sorts
// the matching keys and returns one page. Reading takes no lock: each
// value file is immutable once published, so each item is a version the key
// really had, though the listing as a whole is not a snapshot.
func (s *Store) List(ctx context.Context, prefix string, opts *store.ListOptions) (store.Page, error) {
	const op = "list"
	o := opts.Bounded(DefaultPageSize, math.MaxInt)
	if err := s.begin(ctx, store.GuardPrefix, op, prefix); err != nil {
		return store.Page{}, err
	}
	defer s.inflight.Done()
	if err := s.recoverAll(ctx); err != nil {
		return store.Page{}, opErr(op, prefix, store.ErrTransient, err)
	}
	buckets, err := s.bucketsFor(prefix)
	if err != nil {
		return store.Page{}, opErr(op, prefix, store.ErrTransient, err)
	}
	var items []store.Item
	for _, b := range buckets {
		items, err = s.scanBucket(ctx, b, prefix, o.After, items)
		if err != nil {
			return store.Page{}, opErr(op, prefix, store.ErrTransient, err)
		}
	}
	return store.PageOf(items, o.Limit), nil
}

// bucketsFor returns the bucket directories that can hold keys starting
// with prefix.
func (s *Store) bucketsFor(prefix string) ([]string, error) {
	if i := strings.IndexByte(prefix, '/'); i >= 0 {
		return []string{segmentBucket(prefix[:i])}, nil
	}
	names, err := readDirNames(filepath.Join(s.dir, dataDir))
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, ".") }), nil
}

// scanBucket appends to items the keys in bucket that start with prefix
// and sort after after.
func (s *Store) scanBucket(ctx context.Context, bucket, prefix, after string, items []store.Item) ([]store.Item, error) {
	dir := filepath.Join(s.dir, dataDir, bucket)
	names, err := readDirNames(dir)
	if errors.Is(err, os.ErrNotExist) {
		return items, nil
	}
	if err != nil {
		return nil, err
	}
	for n, name := range names {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted since the directory was read
		}
		if err != nil {
			return nil, err
		}
		h, err := readHeader(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(h.key, prefix) && h.key > after {
			items = append(items, store.Item{Key: h.key, Version: formatVersionString(h.version)})
		}
	}
	return items, nil
}
