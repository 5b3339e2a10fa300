package failover

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Holding is one holding of the lock: its token and when, on this
// process's monotonic clock (as an offset from the run's start), the
// holder began and stopped treating itself as the holder.
type Holding struct {
	Contender  int
	Token      uint64
	Start, End time.Duration
}

// Violation is one broken promise a checker found.
type Violation struct {
	Kind string // "overlap", "inversion", "lost", "doubled", "refused-applied", "out-of-range"
	What string
}

func (v Violation) String() string { return v.Kind + ": " + v.What }

// CheckHoldings finds holdings that overlap in time and tokens that do not
// strictly increase in holding order (the order of their starts).
func CheckHoldings(hs []Holding) []Violation {
	hs = slices.Clone(hs)
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].Start < hs[j].Start })
	var vs []Violation
	for i := 1; i < len(hs); i++ {
		a, b := hs[i-1], hs[i]
		if b.Start < a.End {
			vs = append(vs, Violation{"overlap", fmt.Sprintf("holding of token %d by %d [%v, %v] overlaps token %d by %d from %v",
				a.Token, a.Contender, a.Start, a.End, b.Token, b.Contender, b.Start)})
		}
		if b.Token <= a.Token {
			vs = append(vs, Violation{"inversion", fmt.Sprintf("holding from %v has token %d, not above the previous holding's %d", b.Start, b.Token, a.Token)})
		}
	}
	return vs
}

// AcceptedWrite is one fenced write the store applied: the revision at
// which it applied (the store's acceptance order) and its token.
type AcceptedWrite struct {
	Revision int64
	Token    uint64
}

// CheckFencedWrites finds writes accepted, in revision order, with a token
// older than one accepted before them.
func CheckFencedWrites(ws []AcceptedWrite) []Violation {
	ws = slices.Clone(ws)
	sort.Slice(ws, func(i, j int) bool { return ws[i].Revision < ws[j].Revision })
	var vs []Violation
	var newest uint64
	var at int64
	for _, w := range ws {
		if w.Token < newest {
			vs = append(vs, Violation{"inversion", fmt.Sprintf("write with token %d accepted at revision %d after token %d at revision %d",
				w.Token, w.Revision, newest, at)})
			continue
		}
		newest, at = w.Token, w.Revision
	}
	return vs
}

// Outcome is what an increment's caller was told.
type Outcome int

const (
	Acked   Outcome = iota + 1 // applied
	Refused                    // not applied (contended, transient failures, ctx), never to apply
	Unknown                    // may or may not have applied, may still apply
)

// CounterReport is the counter checker's account.
type CounterReport struct {
	Acked, Refused, Unknown int
	Applied                 int // ids in the final value
	Lost                    int // acknowledged but not applied
	Doubled                 int // applied more than once
	RefusedApplied          int // refused but applied
	Violations              []Violation
}

// CheckCounter compares the increments' outcomes with the ids the final
// value holds (each applied increment appends its unique id once).
func CheckCounter(outcomes map[string]Outcome, final []string) CounterReport {
	var r CounterReport
	seen := map[string]int{}
	for _, id := range final {
		seen[id]++
	}
	for id, n := range seen {
		if n > 1 {
			r.Doubled++
			r.Violations = append(r.Violations, Violation{"doubled", fmt.Sprintf("increment %s applied %d times", id, n)})
		}
		if _, ok := outcomes[id]; !ok {
			r.Violations = append(r.Violations, Violation{"doubled", fmt.Sprintf("increment %s applied but never sent", id)})
		}
	}
	for id, o := range outcomes {
		switch o {
		case Acked:
			r.Acked++
			if seen[id] == 0 {
				r.Lost++
				r.Violations = append(r.Violations, Violation{"lost", fmt.Sprintf("increment %s acknowledged but not applied", id)})
			}
		case Refused:
			r.Refused++
			if seen[id] > 0 {
				r.RefusedApplied++
				r.Violations = append(r.Violations, Violation{"refused-applied", fmt.Sprintf("increment %s refused but applied", id)})
			}
		case Unknown:
			r.Unknown++
		}
	}
	r.Applied = len(final)
	if r.Applied < r.Acked || r.Applied > r.Acked+r.Unknown {
		r.Violations = append(r.Violations, Violation{"out-of-range", fmt.Sprintf("counter is %d, outside [acked %d, acked+unknown %d]",
			r.Applied, r.Acked, r.Acked+r.Unknown)})
	}
	return r
}

// ParseCounter splits a counter value into its ids.
func ParseCounter(v []byte) []string { return strings.Fields(string(v)) }

// Fault is one fault the run injected, from its start to its heal.
type Fault struct {
	Kind        string // "kill-leader", "stop-leader", "cut-clients"
	Member      int    // the leader when it started; -1 for cut-clients
	Start, Heal time.Duration
}

// Stall is the longest time, from the fault's start until the next
// fault's start (or the run's end), during which a workload completed
// nothing: the gap from the fault to its first success, or between two
// successes. successes must be sorted.
func Stall(f Fault, until time.Duration, successes []time.Duration) time.Duration {
	last := f.Start
	var longest time.Duration
	for _, s := range successes {
		if s <= f.Start {
			continue
		}
		if s > until {
			break
		}
		longest = max(longest, s-last)
		last = s
	}
	return max(longest, until-last)
}

// addStalls appends to stalls, under each fault's kind, its Stall against
// successes; end is the workloads' end (the last fault's until).
func addStalls(stalls map[string][]time.Duration, faults []Fault, end time.Duration, successes []time.Duration) {
	for i, f := range faults {
		until := end
		if i+1 < len(faults) {
			until = faults[i+1].Start
		}
		stalls[f.Kind] = append(stalls[f.Kind], Stall(f, until, successes))
	}
}

// mergeStalls appends src's stalls to *dst's, kind by kind.
func mergeStalls(dst *map[string][]time.Duration, src map[string][]time.Duration) {
	if *dst == nil {
		*dst = map[string][]time.Duration{}
	}
	for k, v := range src {
		(*dst)[k] = append((*dst)[k], v...)
	}
}

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Refused:
		return "refused"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}
