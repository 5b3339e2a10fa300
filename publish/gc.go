package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/latchkey/latchkey/store"
)

// DefaultGrace is the GC grace period when GCOptions.Grace is zero.
const DefaultGrace = time.Hour

// GCOptions configure GC. The zero value (or nil) is valid.
type GCOptions struct {
	// Grace: only generations that began longer ago than this are
	// deleted. It must exceed the longest life of any reader or writer plus
	// the clock skew between hosts. Zero means DefaultGrace.
	Grace time.Duration
	// DryRun lists what would be deleted and deletes nothing.
	DryRun bool
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
}

// GCResult says what GC found and did.
type GCResult struct {
	Current string   // the generation the pointer names ("" if none)
	Deleted []string // generations deleted (or, with DryRun, to delete)
	Kept    []string // other generations, kept as younger than the grace
	Objects int      // objects deleted (or to delete)
}

// GC deletes the generations under prefix that the pointer does not name
// and that began longer ago than the grace period: superseded generations
// and abandoned, never-committed ones. It never deletes the current
// generation, nor one within the grace period, nor a key whose generation
// id it does not recognise.
func GC(ctx context.Context, s store.Store, prefix string, opts *GCOptions) (GCResult, error) {
	var o GCOptions
	if opts != nil {
		o = *opts
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	l, err := newLayout(prefix)
	if err != nil {
		return GCResult{}, err
	}
	// The pointer is read before and after listing, and both generations
	// are kept: a commit racing with GC names a generation that is young.
	live := map[string]bool{}
	var res GCResult
	if p, _, ok, err := readPointer(ctx, s, l); err != nil {
		return res, err
	} else if ok {
		live[p.Generation] = true
	}
	gens := map[string][]string{}
	for it, err := range store.All(ctx, s, l.gens()) {
		if err != nil {
			return res, err
		}
		if id, ok := l.genOf(it.Key); ok {
			gens[id] = append(gens[id], it.Key)
		}
	}
	p, _, ok, err := readPointer(ctx, s, l)
	if err != nil {
		return res, err
	}
	if ok {
		live[p.Generation] = true
		res.Current = p.Generation
	}
	now := o.Now()
	ids := make([]string, 0, len(gens))
	for id := range gens {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var errs []error
	for _, id := range ids {
		began, ours := idTime(id)
		if live[id] || !ours {
			continue
		}
		if now.Sub(began) <= o.Grace {
			res.Kept = append(res.Kept, id)
			continue
		}
		res.Deleted = append(res.Deleted, id)
		res.Objects += len(gens[id])
		if o.DryRun {
			continue
		}
		// Data first, manifest last, so a partial GC leaves a generation
		// that is still recognisably abandoned and is finished next time.
		mkey := l.manifest(id)
		keys := append(slices.DeleteFunc(gens[id], func(k string) bool { return k == mkey }), mkey)
		for _, k := range keys {
			if err := s.Delete(ctx, k, store.Unconditional); err != nil {
				errs = append(errs, fmt.Errorf("publish: gc %q: %w", k, err))
			}
		}
	}
	return res, errors.Join(errs...)
}
