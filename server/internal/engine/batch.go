package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
)

// request is one queued Update.
type request struct {
	ctx   context.Context
	fn    func(tx *Tx) error
	state atomic.Int32 // reqPending → reqRunning, or reqPending → reqCancelled
	solo  bool         // failed after writing in a shared batch: run alone
	index uint64
	err   error
	done  chan struct{}
}

const (
	reqPending int32 = iota
	reqRunning
	reqCancelled
)

// errRollback aborts a shared batch whose member failed after writing.
var errRollback = errors.New("engine: batch member failed after writing")

// errNothing rolls back a batch that wrote nothing.
var errNothing = errors.New("engine: nothing to commit")

// Update runs fn in a durable write transaction and returns the index it
// committed at.
//
// It returns only after the transaction is fsynced. Concurrent Updates are
// grouped into one bbolt transaction (group commit): fn sees the writes of
// the Updates before it in the same batch, and all of them are applied in
// index order. If fn returns an error (or panics), nothing it wrote is
// applied, no index is consumed, and Update returns that error.
//
// fn may be called more than once: when a member of a batch fails after
// writing, the batch is rolled back and run again without it, and the
// failing fn runs again alone. So fn must have no effects outside tx, and
// should reset any results it captures at its start.
//
// An Update that changes nothing (no PutRecord, DeleteRecord or Touch) consumes no
// index and returns the current one. Every Update that changes something
// gets one fresh index: tx.Index(), the same for all its records.
//
// If ctx ends before fn starts, Update returns ctx's error and fn never
// runs. Once fn has started, Update waits for the commit.
//
// If bbolt fails to commit (an I/O error, a full disk), every Update that
// ran in that commit fails with an error matching ErrFailed, whatever its
// fn returned (its answer may rest on a batch-mate's write that never
// committed), none of their writes or indexes is acknowledged, and the engine refuses all later Updates and
// Views (fail-stop) until reopened, so no index handed out by the failed
// commit is ever handed out again by this engine.
//
// fn runs on the engine's single writer goroutine: it must not call Update
// (that deadlocks) nor block on anything slow.
func (e *Engine) Update(ctx context.Context, fn func(tx *Tx) error) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := e.Err(); err != nil {
		return 0, err
	}
	r := &request{ctx: ctx, fn: fn, done: make(chan struct{})}
	e.mu.RLock()
	if e.closed {
		e.mu.RUnlock()
		return 0, ErrClosed
	}
	select {
	case e.reqs <- r:
	case <-ctx.Done(): // the queue is full (the disk is slow): give up unqueued
		e.mu.RUnlock()
		return 0, ctx.Err()
	}
	e.mu.RUnlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqPending, reqCancelled) {
			return 0, ctx.Err()
		}
		<-r.done
	}
	return r.index, r.err
}

// writer is the single goroutine that commits. While one commit (and its
// fsync) runs, new requests queue in e.reqs; the next round takes all of
// them: batching without any added delay.
func (e *Engine) writer() {
	defer close(e.done)
	var queue []*request // requests carried over (solo re-runs first)
	for {
		if len(queue) == 0 {
			r, ok := <-e.reqs
			if !ok {
				return
			}
			queue = append(queue, r)
		}
	drain:
		for len(queue) < maxBatch {
			select {
			case r, ok := <-e.reqs:
				if !ok {
					break drain
				}
				queue = append(queue, r)
			default:
				break drain
			}
		}
		var batch []*request
		if queue[0].solo {
			batch, queue = queue[:1], queue[1:]
		} else {
			n := 0
			for n < len(queue) && n < maxBatch && !queue[n].solo {
				n++
			}
			batch, queue = queue[:n], queue[n:]
		}
		retry := e.commit(batch)
		queue = append(retry, queue...)
	}
}

// commit runs batch in one bbolt transaction. It returns the requests that
// must run again (the batch was rolled back because one member failed after
// writing: that member first, marked solo, then the others).
func (e *Engine) commit(batch []*request) []*request {
	start := time.Now()
	if err := e.Err(); err != nil {
		e.refuse(batch, err)
		return nil
	}
	// A lone request is its own batch: if it fails after writing there is
	// nobody to re-run, and fn must not run twice for nothing.
	solo := len(batch) == 1
	var (
		done   []applied
		failed *request
		txid   uint64
	)
	var err error
	if e.log != nil {
		done, failed, txid, err = e.commitLogged(batch)
	} else {
		err = e.db.Update(func(btx *bbolt.Tx) error {
			txid = uint64(btx.ID())
			var err error
			done, failed, err = e.apply(btx, batch, nil)
			return err
		})
		if err == nil && e.syncFault != nil {
			err = e.syncFault()
		}
	}
	switch {
	case errors.Is(err, errRollback) && !solo:
		return rerun(batch, failed)
	case errors.Is(err, errRollback):
		done = nil // the solo request failed; its error is set
	case errors.Is(err, errNothing):
		// read-only or failed Updates only: nothing committed, nothing lost
	case err != nil:
		e.failBatch(batch, err)
		done = nil
	default:
		e.committed(txid, len(done), start)
	}
	e.acknowledge(batch, done)
	if e.log != nil {
		e.maybeCheckpoint()
	}
	return nil
}

// applied is one Update of a batch that ran without error, with the index
// it committed at and the keys it touched.
type applied struct {
	r       *request
	index   uint64
	touched []string
}

// apply runs the batch's Updates in btx, in order, each changing one at
// the next index. It returns the Updates that ran without error; on the
// first that failed after writing, that request and errRollback; and
// errNothing when none wrote. With the log, rec collects every write.
func (e *Engine) apply(btx *bbolt.Tx, batch []*request, rec *walBatch) (done []applied, failed *request, err error) {
	now := e.now().UnixNano()
	meta := btx.Bucket(bucketMeta)
	idx := getU64(meta.Get(keyIndex))
	wrote := false
	// One Tx serves the batch (an fn may not keep its tx), with the last
	// index that changed a record beside it: one allocation.
	bt := new(struct {
		tx      Tx
		kvIndex uint64
	})
	tx := &bt.tx
	for _, r := range batch {
		if r.state.Load() != reqRunning && !r.state.CompareAndSwap(reqPending, reqRunning) {
			continue // cancelled before it started
		}
		r.err = nil
		*tx = Tx{btx: btx, index: idx + 1, write: true, now: now, log: rec, kvIndex: &bt.kvIndex}
		if err := call(r.fn, tx); err != nil {
			r.err = err
			if !tx.dirty {
				continue // wrote nothing: the rest of the batch stands
			}
			return nil, r, errRollback
		}
		a := applied{r: r, index: idx}
		if tx.changed {
			idx++
			a.index, a.touched = idx, tx.touched
		}
		wrote = wrote || tx.dirty
		done = append(done, a)
	}
	if !wrote {
		return done, nil, errNothing // nothing to make durable: skip the fsync
	}
	if err := e.putMeta(meta, rec, keyIndex, idx); err != nil {
		return done, nil, err
	}
	if bt.kvIndex > 0 {
		if err := e.putMeta(meta, rec, keyKVIndex, bt.kvIndex); err != nil {
			return done, nil, err
		}
	}
	return done, nil, nil
}

// putMeta stores v at key of the meta bucket, and in the log record rec.
func (e *Engine) putMeta(meta *bbolt.Bucket, rec *walBatch, key []byte, v uint64) error {
	b := u64(v)
	if err := meta.Put(key, b); err != nil {
		return err
	}
	if rec != nil {
		rec.put(string(bucketMeta), key, b)
	}
	return nil
}

// refuse answers every queued or running request of batch with err: the
// engine has already failed.
func (e *Engine) refuse(batch []*request, err error) {
	for _, r := range batch {
		if r.state.Load() == reqRunning || r.state.CompareAndSwap(reqPending, reqRunning) {
			r.err = err
			close(r.done)
		}
	}
}

// rerun is what runs next after failed failed after writing in a shared
// batch: failed alone first, then every other member that was not
// cancelled (they ran and were rolled back, or were not reached yet).
func rerun(batch []*request, failed *request) []*request {
	failed.solo = true
	retry := []*request{failed}
	for _, r := range batch {
		if r != failed && r.state.Load() != reqCancelled {
			retry = append(retry, r)
		}
	}
	return retry
}

// failBatch handles a failed bbolt commit (an I/O error, a full disk):
// nothing is acknowledged, and the engine stops (see ErrFailed). Every
// member that ran fails, not only the writing ones: a refusal or a
// read-only answer may have been decided on a batch-mate's write that
// never committed (a create answered "already exists").
func (e *Engine) failBatch(batch []*request, err error) {
	ferr := e.fail(err)
	for _, r := range batch {
		if r.state.Load() == reqRunning {
			r.err = ferr
		}
	}
	e.published(0) // waiting Views wake and see the failure
}

// committed publishes a durable commit of n Updates to readers and
// counts it.
func (e *Engine) committed(txid uint64, n int, start time.Time) {
	if e.afterWrite != nil {
		e.afterWrite()
	}
	e.published(txid)
	e.commits.Add(1)
	e.updates.Add(uint64(n))
	if e.opts.OnCommit != nil {
		e.opts.OnCommit(n, time.Since(start))
	}
}

// acknowledge gives every applied Update its index, wakes the waiters of
// the keys they touched, and answers every request that ran.
func (e *Engine) acknowledge(batch []*request, done []applied) {
	if len(done) > 0 {
		if last := done[len(done)-1].index; last > e.index.Load() {
			e.index.Store(last)
		}
	}
	for _, a := range done {
		a.r.index = a.index
		if len(a.touched) > 0 {
			e.watch.commit(a.index, a.touched)
		}
	}
	for _, r := range batch {
		if r.state.Load() == reqRunning {
			close(r.done)
		}
	}
}

// call runs fn, turning a panic into an error so one bad Update cannot take
// the writer down.
func call(fn func(tx *Tx) error, tx *Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			tx.dirty = true
			if be, ok := p.(bboltError); ok {
				err = fmt.Errorf("engine: %w", be.err)
				return
			}
			err = fmt.Errorf("engine: update panicked: %v", p)
		}
	}()
	return fn(tx)
}
