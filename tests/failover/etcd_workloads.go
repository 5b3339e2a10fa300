package failover

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latchkey/latchkey/store"
)

// startMoreWorkloads starts, on wg until work ends, the publish workload
// (two writers, three snapshot readers, on two stores of their own from
// open) and, when opts.LatchkeyBin is set, three lock run loops on the
// store URL url.
func startMoreWorkloads(work context.Context, wg *sync.WaitGroup, h *history, open func() (store.Store, error), opts RunOptions, url string, base time.Time) error {
	var ps [2]store.Store // the publishers', the snapshot readers'
	for i := range ps {
		s, err := open()
		if err != nil {
			return err
		}
		ps[i] = s
	}
	for range 2 {
		wg.Go(func() { h.pub.write(work, ps[0]) })
	}
	for range 3 {
		wg.Go(func() { h.pub.read(work, ps[1]) })
	}
	if opts.LatchkeyBin != "" {
		h.lockRun.log = lockRunLogPath(filepath.Dir(opts.LatchkeyBin), opts.Seed, base)
		for i := range 3 {
			wg.Go(func() { h.lockRun.run(work, opts.LatchkeyBin, url, "lockrun", i) })
		}
	}
	return nil
}

// checkMore adds to r the publish and lock run accounts and the
// linearizability verdict of the recorded KV history, with their
// violations.
func checkMore(h *history, faults []Fault, opts RunOptions, r *Report) error {
	pr, pvs := h.pub.report(faults, opts.Duration)
	r.Publish = pr
	r.Violations = append(r.Violations, pvs...)
	for k, e := range h.pub.samples {
		r.ErrorSamples[k] = e
	}
	if h.lockRun.log != "" {
		lr, lvs, err := h.lockRun.report(faults, opts.Duration)
		if err != nil {
			return err
		}
		r.LockRun = lr
		r.Violations = append(r.Violations, lvs...)
		for k, e := range h.lockRun.samples {
			r.ErrorSamples[k] = e
		}
	}
	lin := CheckLinearizable(h.kv.ops, linTimeout)
	r.Linearizable = []Linearizability{lin}
	if lin.Result == porcupine.Illegal {
		r.Violations = append(r.Violations, Violation{"non-linearizable", "the KV history of the fenced and counter keys: " + lin.String()})
	}
	return nil
}
