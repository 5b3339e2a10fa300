//go:build linux

package failover

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/store"
)

// fencedRecorder rebuilds the history of a fenced key on a store that
// keeps none (Consul): it records every value the workload clients read
// from the key and every value they wrote to it and were told applied,
// with its version.
//
// That is every value the key ever took, whether or not its writer
// learned the outcome: FencedPut writes only conditionally (cas.Update:
// IfAbsent or IfMatch a version it read), so every applied write but the
// last replaced a version some client had read, and the last is read back
// at the end. A write whose caller was told "unknown" and that landed is
// therefore in the history too, as on etcd.
type fencedRecorder struct {
	suffix string // keys recorded: those ending in it

	mu   sync.Mutex
	seen map[string]map[store.Version][]byte // key, version: value
	errs []string
}

func newFencedRecorder(suffix string) *fencedRecorder {
	return &fencedRecorder{suffix: suffix, seen: map[string]map[store.Version][]byte{}}
}

// fullStore is what the lease workload uses of a store: a Locker takes
// the watch and transactions when the store has them.
type fullStore interface {
	store.Store
	store.Watcher
	store.Transactor
}

// recording is a store whose Gets and Puts of the recorder's keys are
// recorded; everything else passes through.
type recording struct {
	fullStore
	rec *fencedRecorder
}

func (r *fencedRecorder) wrap(s fullStore) store.Store { return &recording{fullStore: s, rec: r} }

func (s *recording) Get(ctx context.Context, key string) (store.Entry, error) {
	e, err := s.fullStore.Get(ctx, key)
	if err == nil {
		s.rec.saw(key, e)
	}
	return e, err
}

func (s *recording) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	v, err := s.fullStore.Put(ctx, key, value, cond)
	if err == nil {
		s.rec.saw(key, store.Entry{Key: key, Value: value, Version: v})
	}
	return v, err
}

// saw records that key held e.Value at e.Version.
func (r *fencedRecorder) saw(key string, e store.Entry) {
	if !strings.HasSuffix(key, r.suffix) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := r.seen[key]
	if vs == nil {
		vs = map[store.Version][]byte{}
		r.seen[key] = vs
	}
	if old, ok := vs[e.Version]; ok && string(old) != string(e.Value) {
		r.errs = append(r.errs, fmt.Sprintf("%s version %s held both %q and %q", key, e.Version, old, e.Value))
		return
	}
	vs[e.Version] = e.Value
}

// history returns key's recorded values in version order (the versions
// are Consul's ModifyIndex, in decimal) with their tokens. Two values
// seen at one version are an error: a version names one write.
func (r *fencedRecorder) history(key string) ([]AcceptedWrite, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		return nil, fmt.Errorf("failover: %s", strings.Join(r.errs, "; "))
	}
	var ws []AcceptedWrite
	for v, value := range r.seen[key] {
		rev, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("failover: %s: version %q is not an index: %w", key, v, err)
		}
		tok, err := tokenOf(value)
		if err != nil {
			return nil, fmt.Errorf("failover: %s at version %s: %w", key, v, err)
		}
		ws = append(ws, AcceptedWrite{Revision: rev, Token: tok})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Revision < ws[j].Revision })
	return ws, nil
}
