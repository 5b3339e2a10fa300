package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeprobe"
	"github.com/latchkey/latchkey/store/storeurl"
)

func runProbe(ctx context.Context, e *env, args []string) error {
	f := newCmdFlags(e, "probe", "[--store URL] [--prefix P] [--json]",
		`Check a live store against the capabilities its backend declares, by
exercising each one under a fresh key prefix: create-if-absent twice,
compare-and-swap with current and stale versions, version change on an
identical rewrite (ABA), conditional deletes, delete and recreate, paginated
listing, concurrent writers of one key, transactions and watches where
declared. Some stores accept conditions and silently ignore them; this is how
to find out before relying on one. Every key written is deleted afterwards.
Prints one line per check (PASS, FAIL, SKIP for an undeclared capability);
a FAIL marked BROKEN means the store broke a guarantee it declares.`)
	f.addHelp("  latchkey probe --store 's3://my-bucket/probe?region=eu-west-1'\n", `  0   everything declared is verified
  1   a check failed
  2   bad command line, or a --prefix that already holds keys
`, "")
	storeFlag := addStoreFlag(f.FlagSet)
	prefix := f.String("prefix", "", "write only under `P`, which must hold no key (default latchkey-probe/<random>)")
	asJSON := f.Bool("json", false, "print the report as JSON")
	timeout := f.Duration("timeout", storeprobe.DefaultTimeout, "bound on all the checks (cleanup runs after, bounded separately)")
	opTimeout := f.Duration("op-timeout", storeprobe.DefaultOpTimeout, "bound on each store call")
	if err := f.parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return usagef("probe: unexpected argument %q; usage: latchkey probe [--store URL] [--prefix P] [--json]", f.Arg(0))
	}
	if *timeout <= 0 || *opTimeout <= 0 {
		return usagef("probe: --timeout and --op-timeout must be positive")
	}
	if *prefix != "" {
		if err := store.ValidateKey(strings.TrimSuffix(*prefix, "/")); err != nil {
			return usagef("probe: --prefix: %v", err)
		}
	}
	u, err := storeURL(e, *storeFlag)
	if err != nil {
		return err
	}
	s, err := storeurl.Open(ctx, u)
	if err != nil {
		return err
	}
	defer s.Close()
	opts := &storeprobe.Options{Prefix: *prefix, Timeout: *timeout, OpTimeout: *opTimeout}
	return probeStore(ctx, e, s, probeRedact(u), opts, *asJSON)
}

// probeStore probes s, prints the report and returns an exit-1 error
// naming the failed checks.
func probeStore(ctx context.Context, e *env, s store.Store, name string, opts *storeprobe.Options, asJSON bool) error {
	rep, err := storeprobe.Run(ctx, s, opts)
	if errors.Is(err, storeprobe.ErrPrefixInUse) {
		return usagef("probe: %v", err)
	}
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if asJSON {
		if err := writeProbeJSON(e.stdout, name, rep); err != nil {
			return err
		}
	} else {
		writeProbeTable(e.stdout, name, rep)
	}
	failed := rep.Failed()
	if len(failed) == 0 {
		return nil
	}
	names := make([]string, len(failed))
	nbroken := 0
	for i, r := range failed {
		names[i] = r.Check
		if r.Broken {
			names[i] += " (BROKEN)"
			nbroken++
		}
	}
	return failf("probe: %d check(s) failed, %d declared guarantee(s) broken: %s", len(failed), nbroken, strings.Join(names, "; "))
}

// probeRedact hides a password in the store URL before it is printed.
func probeRedact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable store URL)"
	}
	if _, ok := u.User.Password(); !ok {
		return raw
	}
	return u.Redacted()
}

// probeCaps lists the capabilities in caps that are (want true) or are not
// declared.
func probeCaps(caps store.Capabilities, want bool) []string {
	var out []string
	for _, c := range []struct {
		name string
		on   bool
	}{
		{storeprobe.CapCreateIfAbsent, caps.CreateIfAbsent},
		{storeprobe.CapCompareAndSwap, caps.CompareAndSwap},
		{storeprobe.CapCompareAndDelete, caps.CompareAndDelete},
		{storeprobe.CapTransactions, caps.Transactions},
		{storeprobe.CapWatch, caps.Watch},
		{storeprobe.CapStreaming, caps.Streaming},
		{storeprobe.CapUniqueVersions, caps.UniqueVersions},
	} {
		if c.on == want {
			out = append(out, c.name)
		}
	}
	return out
}

func writeProbeTable(w io.Writer, name string, rep *storeprobe.Report) {
	var b strings.Builder
	fmt.Fprintf(&b, "latchkey probe: %s under %s\n", name, rep.Prefix)
	fmt.Fprintf(&b, "declared:     %s\n", orNone(strings.Join(probeCaps(rep.Capabilities, true), " ")))
	fmt.Fprintf(&b, "not declared: %s\n\n", orNone(strings.Join(probeCaps(rep.Capabilities, false), " ")))
	width := len("CHECK")
	for _, r := range rep.Results {
		width = max(width, len(r.Check))
	}
	fmt.Fprintf(&b, "%-6s %-*s %10s  %s\n", "STATUS", width, "CHECK", "LATENCY", "DETAIL")
	counts := map[storeprobe.Status]int{}
	for _, r := range rep.Results {
		counts[r.Status]++
		line := fmt.Sprintf("%-6s %-*s %10s  %s", r.Status, width, r.Check, probeLatency(r.Latency), r.Detail)
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	left := "no key left behind"
	if n := len(rep.Leftovers); n > 0 {
		left = fmt.Sprintf("%d key(s) left behind", n)
	}
	fmt.Fprintf(&b, "\n%d passed, %d failed, %d skipped; %s\n", counts[storeprobe.Pass], counts[storeprobe.Fail], counts[storeprobe.Skip], left)
	io.WriteString(w, b.String())
}

func probeLatency(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 10 {
		return fmt.Sprintf("%.2fms", ms)
	}
	return fmt.Sprintf("%.1fms", ms)
}

// probeJSON is the --json output.
type probeJSON struct {
	Store        string            `json:"store"`
	Prefix       string            `json:"prefix"`
	OK           bool              `json:"ok"`
	Capabilities map[string]bool   `json:"capabilities"`
	Results      []probeJSONResult `json:"results"`
	Leftovers    []string          `json:"leftovers"`
}

type probeJSONResult struct {
	Check      string  `json:"check"`
	Capability string  `json:"capability,omitempty"`
	Declared   bool    `json:"declared"`
	Status     string  `json:"status"`
	Broken     bool    `json:"broken"`
	Detail     string  `json:"detail,omitempty"`
	LatencyMS  float64 `json:"latency_ms"`
}

func writeProbeJSON(w io.Writer, name string, rep *storeprobe.Report) error {
	out := probeJSON{Store: name, Prefix: rep.Prefix, OK: rep.OK(), Capabilities: map[string]bool{},
		Results: []probeJSONResult{}, Leftovers: append([]string{}, rep.Leftovers...)}
	for _, c := range probeCaps(rep.Capabilities, true) {
		out.Capabilities[c] = true
	}
	for _, c := range probeCaps(rep.Capabilities, false) {
		out.Capabilities[c] = false
	}
	for _, r := range rep.Results {
		out.Results = append(out.Results, probeJSONResult{Check: r.Check, Capability: r.Capability,
			Declared: r.Declared, Status: string(r.Status), Broken: r.Broken, Detail: r.Detail,
			LatencyMS: float64(r.Latency) / float64(time.Millisecond)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
