package storeprobe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/store"
)

// Check is one probe of the store, named like the sentence of the contract
// it verifies. The checks are defined here once: Run runs them against a
// live store, and the conformance suite (store/storetest) runs each of them
// as a subtest, so the probe and the suite cannot disagree on what a check
// means.
type Check struct {
	// Name is what Result.Check reports: "<area>/<sentence>", as in
	// "cas/stale version returns ErrConflict and keeps the value".
	Name string
	// Capability is the declared capability the check verifies (one of
	// the Cap constants), or "" for the basic contract.
	Capability string
	// run returns a detail for a pass, or an error: a brokenError when
	// the store broke the guarantee, any other when an operation failed
	// unexpectedly.
	run func(ctx context.Context, p *prober) (string, error)
}

// Declared reports whether caps declares the capability c verifies; it is
// always true for a check of the basic contract. Run runs only declared
// checks and reports each undeclared capability once instead.
func (c Check) Declared(caps store.Capabilities) bool {
	switch c.Capability {
	case CapCreateIfAbsent:
		return caps.CreateIfAbsent
	case CapCompareAndSwap:
		return caps.CompareAndSwap
	case CapCompareAndDelete:
		return caps.CompareAndDelete
	case CapTransactions:
		return caps.Transactions
	case CapWatch:
		return caps.Watch
	case CapStreaming:
		return caps.Streaming
	case CapUniqueVersions:
		return caps.UniqueVersions
	}
	return true
}

// Checks returns every check, in the order Run runs them.
func Checks() []Check {
	return []Check{
		{"get/missing key returns ErrNotFound", "", checkGetMissing},
		{"put/unconditional write is read back with its version", "", checkPutGet},
		{"delete/if-absent returns ErrUnsupported and keeps the key", "", checkDeleteIfAbsent},
		{"list/sees every key in order across pages", "", checkList},
		{"if-absent/second create returns ErrConflict and keeps the value", CapCreateIfAbsent, checkCreateTwice},
		{"if-absent/concurrent creates of one key: exactly one winner", CapCreateIfAbsent, checkCreateRace},
		{"cas/current version succeeds with a new version", CapCompareAndSwap, checkCASCurrent},
		{"cas/stale version returns ErrConflict and keeps the value", CapCompareAndSwap, checkCASStale},
		{"cas/missing key returns ErrConflict", CapCompareAndSwap, checkCASMissing},
		{"cas/rewrite of identical bytes gets a new version (ABA)", CapUniqueVersions, checkCASIdentical},
		{"cas/deleted and recreated key refuses the old version", CapUniqueVersions, checkCASRecreate},
		{"cas/concurrent swaps of one version: exactly one winner", CapCompareAndSwap, checkCASRace},
		{"cad/stale version returns ErrConflict and keeps the key", CapCompareAndDelete, checkCADStale},
		{"cad/missing key returns ErrConflict", CapCompareAndDelete, checkCADMissing},
		{"cad/current version deletes", CapCompareAndDelete, checkCADCurrent},
		{"txn/a failing check applies nothing", CapTransactions, checkTxnAbort},
		{"txn/all operations apply together", CapTransactions, checkTxnCommit},
		{"watch/WaitChange wakes on a write", CapWatch, checkWatch},
		{"stream/put and get round trip", CapStreaming, checkStream},
	}
}

// notAVersion is a version string no store hands out.
const notAVersion store.Version = "latchkey-probe-not-a-version"

// checkGetMissing reads a never-written key, and one nested below it.
func checkGetMissing(ctx context.Context, p *prober) (string, error) {
	for _, k := range []string{p.key("get-missing"), p.key("get-missing", "a", "b")} {
		e, err := p.get(ctx, k)
		switch {
		case err == nil:
			return "", broken("get of never-written %q returned %q", k, e.Value)
		case !errors.Is(err, store.ErrNotFound):
			return "", fmt.Errorf("get %q: got %v; want ErrNotFound", k, err)
		}
	}
	return "", nil
}

func checkPutGet(ctx context.Context, p *prober) (string, error) {
	k := p.key("put", "k")
	v, err := p.mustPut(ctx, k, "probe value")
	if err != nil {
		return "", err
	}
	return "", p.expect(ctx, k, "probe value", v)
}

func checkDeleteIfAbsent(ctx context.Context, p *prober) (string, error) {
	k := p.key("delete-if-absent", "k")
	v, err := p.mustPut(ctx, k, "kept")
	if err != nil {
		return "", err
	}
	refused := func(k string) error {
		if err := p.del(ctx, k, store.IfAbsent); !errors.Is(err, store.ErrUnsupported) {
			return fmt.Errorf("delete if-absent of %q: got %v; want ErrUnsupported", k, err)
		}
		return nil
	}
	err = refused(k)
	kept := p.expect(ctx, k, "kept", v)
	return "", worst(kept, err, refused(p.key("delete-if-absent", "missing")))
}

// checkList writes five keys and a sibling outside the listed prefix, and
// pages through the prefix two at a time.
func checkList(ctx context.Context, p *prober) (string, error) {
	const n, limit, maxPages = 5, 2, 10
	want := map[string]store.Version{}
	for i := range n {
		k := p.key("list", fmt.Sprintf("k%d", i))
		v, err := p.mustPut(ctx, k, "listed")
		if err != nil {
			return "", err
		}
		want[k] = v
	}
	if _, err := p.mustPut(ctx, p.key("listx"), "not listed"); err != nil {
		return "", err
	}
	prefix := p.opts.Prefix + "/list/"
	opts := &store.ListOptions{Limit: limit}
	var got []store.Item
	pages := 0
	for {
		if pages == maxPages {
			return "", fmt.Errorf("listing %q did not end after %d pages of at most %d (Next does not advance?)", prefix, maxPages, limit)
		}
		page, err := p.list(ctx, prefix, opts)
		if err != nil {
			return "", unexpected(fmt.Sprintf("list %q", prefix), err)
		}
		pages++
		if len(page.Items) > limit {
			return "", fmt.Errorf("list %q with Limit %d returned a page of %d items", prefix, limit, len(page.Items))
		}
		got = append(got, page.Items...)
		if page.Next == "" {
			break
		}
		opts.After = page.Next
	}
	for i, it := range got {
		switch {
		case !strings.HasPrefix(it.Key, prefix):
			return "", fmt.Errorf("list %q returned %q, outside the prefix", prefix, it.Key)
		case i > 0 && it.Key <= got[i-1].Key:
			return "", fmt.Errorf("list %q returned %q after %q: not in ascending order, or twice", prefix, it.Key, got[i-1].Key)
		case want[it.Key] == "":
			return "", fmt.Errorf("list %q returned %q, which the probe never wrote", prefix, it.Key)
		case it.Version != want[it.Key]:
			return "", fmt.Errorf("list %q: %q has version %q; the write returned %q", prefix, it.Key, it.Version, want[it.Key])
		}
	}
	if len(got) != n {
		return "", fmt.Errorf("list %q returned %d of the %d keys written", prefix, len(got), n)
	}
	return fmt.Sprintf("%d keys in %d pages of at most %d", n, pages, limit), nil
}

func checkCreateTwice(ctx context.Context, p *prober) (string, error) {
	k := p.key("if-absent", "k")
	v, err := p.put(ctx, k, "first", store.IfAbsent)
	if err != nil {
		return "", unexpected(fmt.Sprintf("first if-absent put of %q", k), err)
	}
	_, err = p.put(ctx, k, "second", store.IfAbsent)
	refused := wantConflict("second if-absent put of "+quote(k), err, "the store ignores create-if-absent (If-None-Match: *)")
	return "", worst(refused, p.expect(ctx, k, "first", v))
}

// casSwaps is how many swaps in a row checkCASCurrent makes.
const casSwaps = 3

// checkCASCurrent swaps a key casSwaps times, each time if-match the
// version the previous write returned.
func checkCASCurrent(ctx context.Context, p *prober) (string, error) {
	k := p.key("cas-current", "k")
	v, err := p.mustPut(ctx, k, "swap 0")
	if err != nil {
		return "", err
	}
	for i := 1; i <= casSwaps; i++ {
		nv, err := p.put(ctx, k, fmt.Sprintf("swap %d", i), store.IfMatch(v))
		switch {
		case errors.Is(err, store.ErrConflict):
			return "", fmt.Errorf("swap %d: put %q if-match its current version was refused: %v", i, k, err)
		case err != nil:
			return "", unexpected(fmt.Sprintf("swap %d: put %q if-match its current version", i, k), err)
		case nv == "" || nv == v:
			return "", broken("swap %d: put %q if-match %q returned version %q: not a new version", i, k, v, nv)
		}
		v = nv
	}
	return "", p.expect(ctx, k, fmt.Sprintf("swap %d", casSwaps), v)
}

// overwrite writes "one" then "two" to k and returns the first version,
// now stale, and the second, current; the two must differ.
func (p *prober) overwrite(ctx context.Context, k string) (stale, current store.Version, err error) {
	v1, err := p.mustPut(ctx, k, "one")
	if err != nil {
		return "", "", err
	}
	v2, err := p.mustPut(ctx, k, "two")
	if err != nil {
		return "", "", err
	}
	if v1 == v2 {
		return "", "", broken("two writes of different bytes to %q both got version %q", k, v1)
	}
	return v1, v2, nil
}

func checkCASStale(ctx context.Context, p *prober) (string, error) {
	k := p.key("cas-stale", "k")
	v1, v2, err := p.overwrite(ctx, k)
	if err != nil {
		return "", err
	}
	_, err = p.put(ctx, k, "three", store.IfMatch(v1))
	refused := wantConflict("put "+quote(k)+" if-match a stale version", err, "it overwrote a newer version (the store ignores If-Match)")
	return "", worst(refused, p.expect(ctx, k, "two", v2))
}

func checkCASMissing(ctx context.Context, p *prober) (string, error) {
	other, k := p.key("cas-missing", "other"), p.key("cas-missing", "k")
	v, err := p.mustPut(ctx, other, "a real version")
	if err != nil {
		return "", err
	}
	_, err = p.put(ctx, k, "created", store.IfMatch(v))
	refused := wantConflict("put if-match of missing "+quote(k), err, "it created the key")
	return "", worst(refused, p.expectMissing(ctx, k))
}

// checkCASIdentical writes the same bytes twice: a version derived from the
// content (an S3 ETag) would let a stale if-match succeed.
func checkCASIdentical(ctx context.Context, p *prober) (string, error) {
	k := p.key("cas-identical", "k")
	v1, err := p.mustPut(ctx, k, "same bytes")
	if err != nil {
		return "", err
	}
	v2, err := p.mustPut(ctx, k, "same bytes")
	if err != nil {
		return "", err
	}
	if v1 == v2 {
		return "", broken("rewriting identical bytes to %q kept version %q: a stale if-match would succeed (ABA)", k, v1)
	}
	if !p.caps.CompareAndSwap {
		return "", p.expect(ctx, k, "same bytes", v2)
	}
	_, err = p.put(ctx, k, "other bytes", store.IfMatch(v1))
	refused := wantConflict("put "+quote(k)+" if-match the version from before an identical rewrite", err, "ABA")
	return "", worst(refused, p.expect(ctx, k, "same bytes", v2))
}

// checkCASRecreate deletes a key and writes the same bytes again: the
// version from before the delete must match nothing.
func checkCASRecreate(ctx context.Context, p *prober) (string, error) {
	k := p.key("cas-recreate", "k")
	v1, err := p.mustPut(ctx, k, "generation")
	if err != nil {
		return "", err
	}
	if err := p.del(ctx, k, store.Unconditional); err != nil {
		return "", unexpected(fmt.Sprintf("delete %q", k), err)
	}
	if err := p.expectMissing(ctx, k); err != nil {
		return "", err
	}
	v2, err := p.mustPut(ctx, k, "generation")
	if err != nil {
		return "", err
	}
	if v2 == v1 {
		return "", broken("%q deleted and written again got its old version %q", k, v1)
	}
	var putRefused error
	if p.caps.CompareAndSwap {
		_, err = p.put(ctx, k, "stale writer", store.IfMatch(v1))
		putRefused = wantConflict("put "+quote(k)+" if-match the version from before a delete", err, "it overwrote the recreated key")
	}
	var delRefused error
	if p.caps.CompareAndDelete {
		err = p.del(ctx, k, store.IfMatch(v1))
		delRefused = wantConflict("delete "+quote(k)+" if-match the version from before a delete", err, "it deleted the recreated key")
	}
	return "", worst(putRefused, delRefused, p.expect(ctx, k, "generation", v2))
}

func checkCADStale(ctx context.Context, p *prober) (string, error) {
	k := p.key("cad-stale", "k")
	v1, v2, err := p.overwrite(ctx, k)
	if err != nil {
		return "", err
	}
	err = p.del(ctx, k, store.IfMatch(v1))
	refused := wantConflict("delete "+quote(k)+" if-match a stale version", err, "the store ignores delete preconditions")
	return "", worst(refused, p.expect(ctx, k, "two", v2))
}

// checkCADMissing deletes, if-match a real version, a key never written
// and a key deleted since that version was its own.
func checkCADMissing(ctx context.Context, p *prober) (string, error) {
	gone, k := p.key("cad-missing", "gone"), p.key("cad-missing", "k")
	v, err := p.mustPut(ctx, gone, "a real version")
	if err != nil {
		return "", err
	}
	if err := p.del(ctx, gone, store.Unconditional); err != nil {
		return "", unexpected(fmt.Sprintf("delete %q", gone), err)
	}
	const said = "a conditional delete of a missing key must be refused"
	never := wantConflict("delete if-match of never-written "+quote(k), p.del(ctx, k, store.IfMatch(v)), said)
	deleted := wantConflict("delete if-match of deleted "+quote(gone), p.del(ctx, gone, store.IfMatch(v)), said)
	return "", worst(never, deleted)
}

func checkCADCurrent(ctx context.Context, p *prober) (string, error) {
	k := p.key("cad-current", "k")
	v, err := p.mustPut(ctx, k, "doomed")
	if err != nil {
		return "", err
	}
	if err := p.del(ctx, k, store.IfMatch(v)); err != nil {
		return "", fmt.Errorf("delete %q if-match its current version: %w", k, err)
	}
	return "", p.expectMissing(ctx, k)
}

// refusal probes an undeclared capability: the store should refuse it
// with ErrUnsupported rather than perform it non-atomically.
func (p *prober) refusal(ctx context.Context, capability string) string {
	var what string
	var err error
	switch capability {
	case CapCreateIfAbsent:
		what = "put if-absent"
		_, err = p.put(ctx, p.key("refuse-if-absent", "k"), "x", store.IfAbsent)
	case CapCompareAndSwap:
		what = "put if-match"
		k := p.key("refuse-cas", "k")
		if _, err = p.mustPut(ctx, k, "x"); err == nil {
			_, err = p.put(ctx, k, "y", store.IfMatch(notAVersion))
		}
	case CapCompareAndDelete:
		what = "delete if-match"
		k := p.key("refuse-cad", "k")
		if _, err = p.mustPut(ctx, k, "x"); err == nil {
			err = p.del(ctx, k, store.IfMatch(notAVersion))
		}
	case CapTransactions:
		t, ok := p.s.(store.Transactor)
		if !ok {
			return "not declared (no Txn method)"
		}
		what = "a transaction"
		_, err = p.txn(ctx, t, []store.TxnOp{store.Check(p.key("refuse-txn", "k"), store.IfAbsent)})
	case CapWatch:
		return "not declared: waiting polls"
	case CapStreaming:
		return "not declared: values are buffered whole in memory"
	case CapUniqueVersions:
		return "not declared: a version may name the bytes, not the write, so if-match cannot see an A→B→A rewrite of identical bytes"
	}
	switch {
	case errors.Is(err, store.ErrUnsupported):
		return "not declared; " + what + " is refused with ErrUnsupported, as it should be"
	case err == nil:
		return "not declared, yet " + what + " was accepted: do not rely on it"
	}
	return fmt.Sprintf("not declared; %s failed with %v, not ErrUnsupported", what, err)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
