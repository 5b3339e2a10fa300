package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/latchkey/latchkey/store"
)

// DefaultGrace is the GC grace period when GCOptions.Grace is zero.
const DefaultGrace = time.Hour

// GCOptions configure GC. A nil *GCOptions and every zero field mean the
// defaults; a negative Grace is an error.
type GCOptions struct {
	// Grace: a generation is deleted only once it began longer ago than
	// this and, if it was ever replaced, its successor's manifest was
	// written longer ago than this (the successor then swapped the pointer
	// within MaxSwapDelay). It must exceed both the longest life of a
	// reader plus MaxSwapDelay and the writers' Options.MaxAge, plus the
	// clock skew between hosts. Zero means DefaultGrace.
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
	Kept    []string // other generations, kept as within their grace
	Objects int      // objects deleted (or to delete)
	// Generations describes every generation GC judged (not the current
	// one), in id order: what it is and when its grace ends.
	Generations []Generation
}

// Generation is what GC knows of one generation that is not current.
type Generation struct {
	ID    string
	State GenerationState
	// Began is the time in the generation's id; Superseded, for a
	// superseded generation, the Created time of the manifest that named
	// it as its base (zero otherwise).
	Began, Superseded time.Time
	// GraceEnds is when GC may delete it: the grace after the later of
	// Began and Superseded.
	GraceEnds time.Time
	Objects   int  // its objects
	Delete    bool // deleted by this GC (or, with DryRun, to delete)
}

// GenerationState is what a generation that is not current is.
type GenerationState string

const (
	// Superseded: a later generation's manifest names it as its base.
	Superseded GenerationState = "superseded"
	// Abandoned: it has a manifest that no later manifest names (its
	// commit lost, or the successor that named it is gone).
	Abandoned GenerationState = "abandoned"
	// Unfinished: it has no manifest (still being written, or given up
	// before its manifest).
	Unfinished GenerationState = "unfinished"
)

// withDefaults returns a copy of o (nil allowed) with zero fields set to
// the defaults, or an error for a negative Grace.
func (o *GCOptions) withDefaults() (GCOptions, error) {
	var r GCOptions
	if o != nil {
		r = *o
	}
	if r.Grace < 0 {
		return r, fmt.Errorf("publish: negative GCOptions.Grace %v (zero means DefaultGrace)", r.Grace)
	}
	if r.Grace == 0 {
		r.Grace = DefaultGrace
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r, nil
}

// GC deletes the generations under prefix that the pointer does not name
// and whose grace period has passed: superseded generations and abandoned,
// never-committed ones. It never deletes the current generation, nor a key
// whose generation id it does not recognise.
//
// The grace period of a generation runs from the later of the time it
// began (the time in its id) and the time its successor committed (the
// Created time in the manifest of the generation that replaced it, which
// Commit keeps within MaxSwapDelay of the pointer swap), so a
// reader that opened a generation just before it was superseded has the
// whole grace period to finish, however old the generation was. GC reads
// the manifest of every generation to learn this.
func GC(ctx context.Context, s store.Store, prefix string, opts *GCOptions) (GCResult, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return GCResult{}, err
	}
	l, err := newLayout(prefix)
	if err != nil {
		return GCResult{}, err
	}
	// The pointer is read before and after listing, and both generations
	// are kept: a commit racing with GC names a generation that is young,
	// and the generation it replaced has a successor committed just now.
	live := map[string]bool{}
	var res GCResult
	if p, _, ok, err := readPointer(ctx, s, l); err != nil {
		return res, err
	} else if ok {
		live[p.Generation] = true
	}
	gens, err := listGenerations(ctx, s, l)
	if err != nil {
		return res, err
	}
	p, _, ok, err := readPointer(ctx, s, l)
	if err != nil {
		return res, err
	}
	if ok {
		live[p.Generation] = true
		res.Current = p.Generation
	}
	superseded, err := supersessions(ctx, s, l, gens)
	if err != nil {
		return res, err
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
		g := Generation{ID: id, Began: began, Superseded: superseded[id], Objects: len(gens[id]),
			State: GenerationStateOf(slices.Contains(gens[id], l.manifest(id)), superseded[id])}
		g.GraceEnds = GraceEnds(g.Began, g.Superseded, o.Grace)
		g.Delete = now.After(g.GraceEnds)
		res.Generations = append(res.Generations, g)
		if !g.Delete {
			res.Kept = append(res.Kept, id)
			continue
		}
		res.Deleted = append(res.Deleted, id)
		res.Objects += len(gens[id])
		if !o.DryRun {
			errs = append(errs, deleteGeneration(ctx, s, l, id, gens[id])...)
		}
	}
	return res, errors.Join(errs...)
}

// GenerationStateOf is what a generation that is not current is, by the
// rule GC uses: Superseded when a later manifest names it as its base
// (supersededAt, that manifest's Created, is not zero), else Abandoned
// when it has a manifest, else Unfinished. Tools that read generations
// themselves (the server's console) use it, so they say what GC does.
func GenerationStateOf(hasManifest bool, supersededAt time.Time) GenerationState {
	switch {
	case !supersededAt.IsZero():
		return Superseded
	case hasManifest:
		return Abandoned
	}
	return Unfinished
}

// GraceEnds is when GC with the given grace may delete a generation that
// began at began (GenerationTime of its id) and was superseded at
// supersededAt (zero if it was not): the grace after the later of the two.
func GraceEnds(began, supersededAt time.Time, grace time.Duration) time.Time {
	if supersededAt.After(began) {
		began = supersededAt
	}
	return began.Add(grace)
}

// listGenerations lists the keys under prefix/gen/, by generation id.
func listGenerations(ctx context.Context, s store.Store, l layout) (map[string][]string, error) {
	gens := map[string][]string{}
	for it, err := range store.All(ctx, s, l.gens()) {
		if err != nil {
			return nil, err
		}
		if id, ok := l.genOf(it.Key); ok {
			gens[id] = append(gens[id], it.Key)
		}
	}
	return gens, nil
}

// deleteGeneration deletes the listed keys of one generation: data first,
// manifest last, so a partial GC leaves a generation that is still
// recognisably abandoned and is finished next time, and its successor
// link stays readable until the end.
func deleteGeneration(ctx context.Context, s store.Store, l layout, id string, keys []string) []error {
	mkey := l.manifest(id)
	if slices.Contains(keys, mkey) {
		keys = append(slices.DeleteFunc(keys, func(k string) bool { return k == mkey }), mkey)
	}
	var errs []error
	for _, k := range keys {
		if err := s.Delete(ctx, k, store.Unconditional); err != nil {
			errs = append(errs, fmt.Errorf("publish: gc %q: %w", k, err))
		}
	}
	return errs
}

// supersessions reads the manifest of every listed generation and returns,
// for each generation some manifest names as its Base, the latest Created
// of those manifests: the generation stopped being current no earlier than
// that, and (if that successor committed) at most MaxSwapDelay plus one
// write's latency later, since Commit writes the manifest after checking
// its objects and refuses a pointer write past MaxSwapDelay. A generation replaced by a
// successor that GC has since removed stopped being current even earlier.
// A manifest that cannot be read or parsed stops GC: without it, GC cannot
// tell which generation it replaced.
func supersessions(ctx context.Context, s store.Store, l layout, gens map[string][]string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for id, keys := range gens {
		mkey := l.manifest(id)
		if !slices.Contains(keys, mkey) {
			continue // never committed: no successor link
		}
		m, err := manifestHead(ctx, s, mkey)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the listing (another GC)
		}
		if err != nil {
			return nil, fmt.Errorf("publish: gc: manifest %q: %w", mkey, err)
		}
		if m.Base != "" && m.Created.After(out[m.Base]) {
			out[m.Base] = m.Created
		}
	}
	return out, nil
}

// manifestHead reads a manifest's fields up to its file list, which comes
// last, and stops there: on a streaming store GC reads a few hundred
// bytes of each manifest, however many files it lists.
func manifestHead(ctx context.Context, s store.Store, key string) (Manifest, error) {
	rc, _, err := store.GetStream(ctx, s, key)
	if err != nil {
		return Manifest{}, err
	}
	defer rc.Close()
	var m Manifest
	dec := json.NewDecoder(rc)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Manifest{}, fmt.Errorf("not a JSON object (%v)", err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return Manifest{}, err
		}
		var dst any
		switch t {
		case "files":
			return m, nil
		case "base":
			dst = &m.Base
		case "created":
			dst = &m.Created
		default:
			dst = new(json.RawMessage)
		}
		if err := dec.Decode(dst); err != nil {
			return Manifest{}, err
		}
	}
	return m, nil
}
