package storeprobe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/latchkey/latchkey/store"
)

// racer is one concurrent writer's outcome.
type racer struct {
	value   string
	version store.Version
	err     error
}

// race runs Options.Racers concurrent puts of key under cond, released
// together, and judges them: at most one may succeed, and the key must
// then hold the winner's value and version (or, with no acknowledged
// winner, before or the value of a racer whose outcome is unknown).
func (p *prober) race(ctx context.Context, key string, cond store.Condition, before string) (string, error) {
	rs := make([]racer, p.opts.Racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range rs {
		rs[i].value = fmt.Sprintf("racer-%d", i)
		wg.Go(func() {
			<-start
			rs[i].version, rs[i].err = p.put(ctx, key, rs[i].value, cond)
		})
	}
	close(start)
	wg.Wait()

	var winners, unknown []int
	var failures []error
	for i, r := range rs {
		switch {
		case r.err == nil:
			winners = append(winners, i)
		case errors.Is(r.err, store.ErrUnknownOutcome):
			unknown = append(unknown, i)
		case errors.Is(r.err, store.ErrConflict), errors.Is(r.err, store.ErrTransient):
		default:
			failures = append(failures, r.err)
		}
	}
	if len(winners) > 1 {
		return "", broken("%d of %d racers won %q (racers %v): conditional writes are not atomic", len(winners), len(rs), key, winners)
	}
	e, err := p.get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound) && len(winners) == 1:
		return "", broken("racer %d won %q, but the key is gone", winners[0], key)
	case errors.Is(err, store.ErrNotFound) && before == "":
	case err != nil:
		return "", unexpected(fmt.Sprintf("get %q after the race", key), err)
	}
	if len(winners) == 1 {
		w := rs[winners[0]]
		if string(e.Value) != w.value || e.Version != w.version {
			return "", broken("racer %d won %q with version %q, but it holds %q at version %q", winners[0], key, w.version, e.Value, e.Version)
		}
	} else {
		allowed := []string{before}
		for _, i := range unknown {
			allowed = append(allowed, rs[i].value)
		}
		if !slices.Contains(allowed, string(e.Value)) {
			return "", broken("no racer won %q, yet it holds %q", key, e.Value)
		}
	}
	if len(failures) > 0 {
		return "", fmt.Errorf("%d racer(s) failed unexpectedly: %w", len(failures), errors.Join(failures...))
	}
	if len(winners) == 0 && len(unknown) == 0 {
		return "", fmt.Errorf("all %d racers on %q were refused; one should have won", len(rs), key)
	}
	if len(winners) == 0 {
		return fmt.Sprintf("%d racers: no acknowledged winner, %d outcome(s) unknown, key consistent", len(rs), len(unknown)), nil
	}
	return fmt.Sprintf("%d racers: 1 winner, %d refused", len(rs), len(rs)-1-len(unknown)), nil
}

func checkCreateRace(ctx context.Context, p *prober) (string, error) {
	return p.race(ctx, p.key("if-absent-race", "k"), store.IfAbsent, "")
}

func checkCASRace(ctx context.Context, p *prober) (string, error) {
	k := p.key("cas-race", "k")
	v, err := p.mustPut(ctx, k, "base")
	if err != nil {
		return "", err
	}
	return p.race(ctx, k, store.IfMatch(v), "base")
}

// txnKeys returns the store's Transactor and writes the starting state of
// the transaction checks: a, c and d exist, b does not.
func (p *prober) txnKeys(ctx context.Context, name string) (_ store.Transactor, keys [4]string, vers [4]store.Version, err error) {
	t, ok := p.s.(store.Transactor)
	if !ok {
		return nil, keys, vers, errors.New("declares transactions but has no Txn method (store.Transactor)")
	}
	for i, n := range []string{"a", "b", "c", "d"} {
		keys[i] = p.key(name, n)
		if n == "b" {
			continue
		}
		if vers[i], err = p.mustPut(ctx, keys[i], n+"1"); err != nil {
			return nil, keys, vers, err
		}
	}
	return t, keys, vers, nil
}

// checkTxnAbort sends three writes that would succeed and a last check
// that fails: nothing may change.
func checkTxnAbort(ctx context.Context, p *prober) (string, error) {
	t, k, v, err := p.txnKeys(ctx, "txn-abort")
	if err != nil {
		return "", err
	}
	_, err = p.txn(ctx, t, []store.TxnOp{
		store.PutOp(k[0], []byte("a2"), store.IfMatch(v[0])),
		store.PutOp(k[1], []byte("b2"), store.IfAbsent),
		store.DeleteOp(k[2], store.IfMatch(v[2])),
		store.Check(k[3], store.IfAbsent), // fails: d exists
	})
	refused := wantConflict("a transaction whose last check fails", err, "it was applied")
	var te *store.TxnError
	if refused == nil && (!errors.As(err, &te) || te.Index != 3) {
		refused = fmt.Errorf("the refused transaction's error %v does not name op 3 in a *store.TxnError", err)
	}
	kept := worst(p.expect(ctx, k[0], "a1", v[0]), p.expectMissing(ctx, k[1]),
		p.expect(ctx, k[2], "c1", v[2]), p.expect(ctx, k[3], "d1", v[3]))
	if kept != nil && err != nil {
		kept = broken("the transaction was refused but partly applied: %v", kept)
	}
	return "", worst(refused, kept)
}

func checkTxnCommit(ctx context.Context, p *prober) (string, error) {
	t, k, v, err := p.txnKeys(ctx, "txn-commit")
	if err != nil {
		return "", err
	}
	got, err := p.txn(ctx, t, []store.TxnOp{
		store.PutOp(k[0], []byte("a2"), store.IfMatch(v[0])),
		store.PutOp(k[1], []byte("b2"), store.IfAbsent),
		store.DeleteOp(k[2], store.IfMatch(v[2])),
		store.Check(k[3], store.IfMatch(v[3])),
	})
	if err != nil {
		return "", unexpected("a transaction whose conditions all hold", err)
	}
	if len(got) != 4 || got[0] == "" || got[0] == v[0] || got[1] == "" {
		return "", fmt.Errorf("transaction returned versions %q; want a new version for each put", got)
	}
	return "", worst(p.expect(ctx, k[0], "a2", got[0]), p.expect(ctx, k[1], "b2", got[1]),
		p.expectMissing(ctx, k[2]), p.expect(ctx, k[3], "d1", v[3]))
}

// watchSettle is how long the watcher gets to start waiting before the
// write that must wake it.
const watchSettle = 100 * time.Millisecond

// maxEarlyWakes bounds the returns without a change the watch check
// tolerates: a WaitChange that never waits would otherwise spin on Get.
const maxEarlyWakes = 50

func checkWatch(ctx context.Context, p *prober) (string, error) {
	w, ok := p.s.(store.Watcher)
	if !ok {
		return "", errors.New("declares watch but has no WaitChange method (store.Watcher)")
	}
	k := p.key("watch", "k")
	v, err := p.mustPut(ctx, k, "before")
	if err != nil {
		return "", err
	}
	sctx, cancel := context.WithTimeout(ctx, p.opts.OpTimeout)
	err = w.WaitChange(sctx, k, notAVersion)
	cancel()
	if err != nil {
		return "", fmt.Errorf("WaitChange(%q) with a version the key does not have did not return at once: %w", k, err)
	}

	type wake struct {
		at    time.Time
		early int
		err   error
	}
	woke := make(chan wake, 1)
	wctx, cancel := context.WithTimeout(ctx, watchSettle+p.opts.OpTimeout+p.opts.WatchTimeout)
	defer cancel()
	go func() {
		for early := 0; ; early++ {
			if early > maxEarlyWakes {
				woke <- wake{early: early, err: errors.New("it returned without a change too often: it does not wait")}
				return
			}
			if err := w.WaitChange(wctx, k, v); err != nil {
				woke <- wake{early: early, err: err}
				return
			}
			e, err := p.get(wctx, k)
			if err == nil && e.Version == v {
				continue // an early return, allowed; wait again
			}
			woke <- wake{at: time.Now(), early: early}
			return
		}
	}()
	select {
	case <-time.After(watchSettle):
	case r := <-woke:
		return "", fmt.Errorf("WaitChange(%q) returned before any write: %v", k, r.err)
	}
	wrote := time.Now()
	if _, err := p.mustPut(ctx, k, "after"); err != nil {
		return "", err
	}
	r := <-woke
	if r.err != nil {
		return "", fmt.Errorf("WaitChange(%q) did not wake on a write (%d early returns): %w", k, r.early, r.err)
	}
	if lat := r.at.Sub(wrote); lat > p.opts.WatchTimeout {
		return "", fmt.Errorf("WaitChange(%q) woke %v after the write; the bound is %v", k, lat, p.opts.WatchTimeout)
	}
	return fmt.Sprintf("woke %v after the write began (%d early returns)", r.at.Sub(wrote).Round(time.Microsecond), r.early), nil
}

// streamSize is large enough to span many reads of a stream.
const streamSize = 256 << 10

func checkStream(ctx context.Context, p *prober) (string, error) {
	st, ok := p.s.(store.Streamer)
	if !ok {
		return "", errors.New("declares streaming but has no PutStream/GetStream (store.Streamer)")
	}
	k := p.key("stream", "k")
	data := make([]byte, streamSize)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	cond := store.Unconditional
	if p.caps.CreateIfAbsent {
		cond = store.IfAbsent
	}
	octx, cancel := context.WithTimeout(ctx, p.opts.OpTimeout)
	defer cancel()
	v, err := st.PutStream(octx, k, bytes.NewReader(data), cond)
	if err != nil {
		return "", unexpected(fmt.Sprintf("put stream %q", k), err)
	}
	if err := p.readStream(octx, st, k, data, v); err != nil {
		return "", err
	}
	if !p.caps.CreateIfAbsent {
		return fmt.Sprintf("%d bytes", len(data)), nil
	}
	_, err = st.PutStream(octx, k, bytes.NewReader([]byte("second")), store.IfAbsent)
	refused := wantConflict("a second if-absent put stream of "+quote(k), err, "the stream ignores its condition")
	return fmt.Sprintf("%d bytes", len(data)), worst(refused, p.readStream(octx, st, k, data, v))
}

func (p *prober) readStream(ctx context.Context, st store.Streamer, k string, want []byte, v store.Version) error {
	rc, got, err := st.GetStream(ctx, k)
	if err != nil {
		return unexpected(fmt.Sprintf("get stream %q", k), err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	switch {
	case err != nil:
		return unexpected(fmt.Sprintf("read stream %q", k), err)
	case got != v:
		return broken("get stream %q: version %q; the put returned %q", k, got, v)
	case !bytes.Equal(b, want):
		return broken("get stream %q: %d bytes differ from the %d written", k, len(b), len(want))
	}
	return nil
}
