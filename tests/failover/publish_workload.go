package failover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store"
)

// The publish workload: writers commit generations of pubNames under one
// prefix again and again, each object holding its generation's id and its
// name; readers open snapshots and read every object. A snapshot read is
// whole when it names exactly pubNames and every object holds the
// snapshot's own generation id, and it may show only a generation whose
// Commit was acknowledged or of unknown outcome.

// pubNames are the objects of every generation.
var pubNames = []string{"a", "b", "c"}

// pubPrefix is where the workload publishes, under the run's prefix.
const pubPrefix = "pub"

// SnapshotRead is one reader's snapshot: its generation and what each
// object it read held.
type SnapshotRead struct {
	At         time.Duration
	Generation string
	Objects    map[string]string // name -> content
	Err        string            // a failed read of an object (corrupt, missing); "" when all were read
}

// PublishReport is the publish workload's account.
type PublishReport struct {
	Commits, Superseded, Refused, Unknown int // the writers' outcomes
	Reads, ReadErrors                     int // whole snapshot reads, and reads that failed (transient, not a violation)
	Generations                           int // distinct generations seen by readers
	Stall                                 map[string][]time.Duration
}

type pubHistory struct {
	since func() time.Duration

	mu       sync.Mutex
	commits  map[string]Outcome // by generation id
	reads    []SnapshotRead
	readOK   []time.Duration
	readErrs int
	samples  map[string]string
	// superseded counts the refused commits that lost to another writer
	// (publish.ErrSuperseded), the expected refusal.
	superseded int
}

func newPubHistory(since func() time.Duration) *pubHistory {
	return &pubHistory{since: since, commits: map[string]Outcome{}, samples: map[string]string{}}
}

func (h *pubHistory) sample(kind string, err error) {
	if _, ok := h.samples[kind]; !ok {
		h.samples[kind] = err.Error()
	}
}

// write begins, fills and commits generations until ctx ends. Each
// commit has its own 20 s budget, so the run's end does not turn it into
// an unknown outcome.
func (h *pubHistory) write(ctx context.Context, s store.Store) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		h.writeOnce(wctx, s)
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Millisecond):
		}
	}
}

func (h *pubHistory) writeOnce(ctx context.Context, s store.Store) {
	w, err := publish.Begin(ctx, s, pubPrefix, nil)
	if err != nil {
		h.mu.Lock()
		h.sample("publish begin", err)
		h.mu.Unlock()
		return
	}
	for _, n := range pubNames {
		if err := w.Put(ctx, n, strings.NewReader(w.ID()+" "+n)); err != nil {
			w.Abort(ctx)
			h.mu.Lock()
			h.sample("publish put", err)
			h.mu.Unlock()
			return
		}
	}
	_, err = w.Commit(ctx)
	o := Acked
	switch {
	case err == nil:
	case errors.Is(err, store.ErrUnknownOutcome):
		o = Unknown
	default:
		o = Refused
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.commits[w.ID()] = o
	if errors.Is(err, publish.ErrSuperseded) {
		h.superseded++
	} else if err != nil {
		h.sample("publish commit "+o.String(), err)
	}
}

// read opens snapshots and reads every object until ctx ends.
func (h *pubHistory) read(ctx context.Context, s store.Store) {
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := h.readOnce(rctx, s)
		cancel()
		h.mu.Lock()
		switch {
		case err == nil:
			h.reads = append(h.reads, r)
			if r.Err == "" {
				h.readOK = append(h.readOK, r.At)
			}
		case !errors.Is(err, publish.ErrNothingPublished) && ctx.Err() == nil:
			h.readErrs++
			h.sample("snapshot read", err)
		}
		h.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// readOnce reads one snapshot. A failure to open it, or a transient
// failure reading an object, is an error (the read proves nothing); an
// object that is missing or does not match its manifest is recorded in
// the read, for the checker.
func (h *pubHistory) readOnce(ctx context.Context, s store.Store) (SnapshotRead, error) {
	snap, err := publish.Open(ctx, s, pubPrefix)
	if err != nil {
		return SnapshotRead{}, err
	}
	r := SnapshotRead{Generation: snap.Generation(), Objects: map[string]string{}}
	for _, f := range snap.Files() {
		b, err := snap.ReadFile(ctx, f.Name)
		switch {
		case errors.Is(err, publish.ErrCorrupt), errors.Is(err, store.ErrNotFound):
			r.Err = fmt.Sprintf("%s: %v", f.Name, err)
		case err != nil:
			return SnapshotRead{}, err
		}
		r.Objects[f.Name] = string(b)
	}
	r.At = h.since()
	return r, nil
}

// CheckSnapshots finds snapshot reads that are not one whole generation
// (an object missing, extra, corrupt, or holding another generation's
// content), and reads of a generation whose commit was refused or never
// made.
func CheckSnapshots(reads []SnapshotRead, commits map[string]Outcome, names []string) []Violation {
	var vs []Violation
	for _, r := range reads {
		var got []string
		for n := range r.Objects {
			got = append(got, n)
		}
		sort.Strings(got)
		want := slices.Sorted(slices.Values(names))
		switch {
		case r.Err != "":
			vs = append(vs, Violation{"torn-snapshot", fmt.Sprintf("snapshot of %s at %v: %s", r.Generation, r.At, r.Err)})
			continue
		case !slices.Equal(got, want):
			vs = append(vs, Violation{"torn-snapshot", fmt.Sprintf("snapshot of %s at %v names %v, want %v", r.Generation, r.At, got, want)})
			continue
		}
		for _, n := range names {
			if c := r.Objects[n]; !bytes.Equal([]byte(c), []byte(r.Generation+" "+n)) {
				vs = append(vs, Violation{"torn-snapshot", fmt.Sprintf("snapshot of %s at %v: %s holds %q", r.Generation, r.At, n, c)})
			}
		}
		switch commits[r.Generation] {
		case Acked, Unknown:
		case Refused:
			vs = append(vs, Violation{"refused-visible", fmt.Sprintf("snapshot at %v shows %s, whose commit was refused", r.At, r.Generation)})
		default:
			vs = append(vs, Violation{"refused-visible", fmt.Sprintf("snapshot at %v shows %s, which no writer committed", r.At, r.Generation)})
		}
	}
	return vs
}

// report counts the outcomes, checks the reads and measures the readers'
// stall after each fault.
func (h *pubHistory) report(faults []Fault, end time.Duration) (PublishReport, []Violation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := PublishReport{Reads: len(h.reads), ReadErrors: h.readErrs, Stall: map[string][]time.Duration{}}
	for _, o := range h.commits {
		switch o {
		case Acked:
			r.Commits++
		case Unknown:
			r.Unknown++
		case Refused:
			r.Refused++
		}
	}
	r.Superseded = h.superseded
	gens := map[string]bool{}
	for _, rd := range h.reads {
		gens[rd.Generation] = true
	}
	r.Generations = len(gens)
	slices.Sort(h.readOK)
	addStalls(r.Stall, faults, end, h.readOK)
	return r, CheckSnapshots(h.reads, h.commits, pubNames)
}

func (r *PublishReport) add(o PublishReport) {
	r.Commits += o.Commits
	r.Superseded += o.Superseded
	r.Refused += o.Refused
	r.Unknown += o.Unknown
	r.Reads += o.Reads
	r.ReadErrors += o.ReadErrors
	r.Generations += o.Generations
	mergeStalls(&r.Stall, o.Stall)
}
