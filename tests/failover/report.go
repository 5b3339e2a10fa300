package failover

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Merge adds o's counts, faults and stalls to r (for a summary of many
// runs).
func (r *Report) Merge(o *Report) {
	r.Faults = append(r.Faults, o.Faults...)
	r.Holdings += o.Holdings
	r.RunErrors = append(r.RunErrors, o.RunErrors...)
	r.FencedWrites += o.FencedWrites
	if r.FencedRefused == nil {
		r.FencedRefused = map[string]int{}
	}
	for k, n := range o.FencedRefused {
		r.FencedRefused[k] += n
	}
	if r.ErrorSamples == nil {
		r.ErrorSamples = map[string]string{}
	}
	for k, e := range o.ErrorSamples {
		if _, ok := r.ErrorSamples[k]; !ok {
			r.ErrorSamples[k] = e
		}
	}
	r.Counter.add(o.Counter)
	r.Violations = append(r.Violations, o.Violations...)
	r.Linearizable = append(r.Linearizable, o.Linearizable...)
	r.Publish.add(o.Publish)
	r.LockRun.add(o.LockRun)
	mergeStalls(&r.LeaseStall, o.LeaseStall)
	mergeStalls(&r.CountStall, o.CountStall)
}

// String is the one-line summary of a run.
func (r *Report) String() string {
	var b strings.Builder
	kinds := map[string]int{}
	for _, f := range r.Faults {
		kinds[f.Kind]++
	}
	count := map[string]int{}
	for _, v := range r.Violations {
		count[v.Kind]++
	}
	fmt.Fprintf(&b, "seed=%d faults=%s holdings=%d (run errors %d) fenced-writes=%d (refused %v) increments acked=%d unknown=%d refused=%d applied=%d overlaps=%d inversions=%d lost=%d doubled=%d refused-applied=%d out-of-range=%d",
		r.Seed, fmtCounts(kinds), r.Holdings, len(r.RunErrors), r.FencedWrites, fmtCounts(r.FencedRefused), r.Counter.Acked, r.Counter.Unknown, r.Counter.Refused, r.Counter.Applied,
		count["overlap"], count["inversion"], count["lost"], count["doubled"], count["refused-applied"], count["out-of-range"])
	fmt.Fprintf(&b, " linearizable=%s", fmtVerdicts(r.Linearizable))
	fmt.Fprintf(&b, " publish commits=%d superseded=%d refused=%d unknown=%d snapshot-reads=%d (failed %d) torn=%d refused-visible=%d",
		r.Publish.Commits, r.Publish.Superseded, r.Publish.Refused, r.Publish.Unknown, r.Publish.Reads, r.Publish.ReadErrors, count["torn-snapshot"], count["refused-visible"])
	fmt.Fprintf(&b, " lock-run processes=%d (failed %d) holdings=%d", r.LockRun.Runs, r.LockRun.Failed, r.LockRun.Holdings)
	lengths := map[string][]time.Duration{}
	for _, f := range r.Faults {
		lengths[f.Kind] = append(lengths[f.Kind], f.Heal-f.Start)
	}
	for _, k := range sortedKeys(lengths) {
		p50, mx := percentiles(lengths[k])
		fmt.Fprintf(&b, " length[%s]=p50 %v max %v", k, p50.Round(time.Millisecond), mx.Round(time.Millisecond))
	}
	for _, w := range []struct {
		name string
		m    map[string][]time.Duration
	}{{"lease", r.LeaseStall}, {"counter", r.CountStall}, {"snapshot", r.Publish.Stall}, {"lock-run", r.LockRun.Stall}} {
		for _, k := range sortedKeys(w.m) {
			p50, mx := percentiles(w.m[k])
			fmt.Fprintf(&b, " stall[%s,%s]=p50 %v max %v", w.name, k, p50.Round(time.Millisecond), mx.Round(time.Millisecond))
		}
	}
	return b.String()
}

func fmtCounts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// percentiles returns the median (the lower of the middle two) and the
// maximum.
func percentiles(ds []time.Duration) (p50, mx time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2], s[len(s)-1]
}

// kindIndex is the index of fault i among the faults of its kind (its
// place in LeaseStall and CountStall).
func (r *Report) kindIndex(i int) int {
	n := 0
	for _, f := range r.Faults[:i] {
		if f.Kind == r.Faults[i].Kind {
			n++
		}
	}
	return n
}

// Around returns what happened to the lease workload in [from, to]: the
// holdings that overlap it and the lock runs that failed in it.
func (r *Report) Around(from, to time.Duration) []string {
	var out []string
	for _, h := range r.HoldingList {
		if h.End >= from && h.Start <= to {
			out = append(out, fmt.Sprintf("holding c%d token %d [%v, %v]", h.Contender, h.Token, h.Start.Round(time.Millisecond), h.End.Round(time.Millisecond)))
		}
	}
	for _, e := range r.RunErrors {
		if e.At >= from && e.At <= to {
			out = append(out, fmt.Sprintf("%v c%d: %s", e.At.Round(time.Millisecond), e.Contender, e.What))
		}
	}
	return out
}
