package consulapi

import (
	"slices"
	"strings"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// kvTx is what the KV verbs need from a transaction. direct is the engine
// transaction itself; overlay buffers the writes of a /v1/txn so that they
// reach the engine only once every op has succeeded.
type kvTx interface {
	GetKV(key string) (engine.KV, bool)
	PutKV(kv engine.KV) engine.KV
	DeleteKV(key string) bool
	ListKV(prefix, after string, limit int) []engine.KV
	// setHeld records (held) or forgets that session id holds key.
	setHeld(id, key string, held bool)
	sessionExists(id string) bool
}

// direct applies straight to the engine transaction.
type direct struct{ *engine.Tx }

func (d direct) setHeld(id, key string, held bool) {
	if held {
		indexHeld(d.Tx, id, key)
	} else {
		unindexHeld(d.Tx, id, key)
	}
}

func (d direct) sessionExists(id string) bool {
	_, ok := loadSession(d.Tx, id)
	return ok
}

// overlay reads through to tx and keeps its own writes in memory, so a txn
// whose op fails writes nothing: engine.Update then fails without having
// written, which is cheap for the engine (no batch re-run) and leaves the
// other Updates of the batch alone. commit replays the writes, in order.
type overlay struct {
	tx  *engine.Tx
	kv  map[string]*engine.KV // nil: deleted in this txn
	log []func(*engine.Tx)
}

func newOverlay(tx *engine.Tx) *overlay {
	return &overlay{tx: tx, kv: map[string]*engine.KV{}}
}

func (o *overlay) GetKV(key string) (engine.KV, bool) {
	if kv, ok := o.kv[key]; ok {
		if kv == nil {
			return engine.KV{}, false
		}
		return *kv, true
	}
	return o.tx.GetKV(key)
}

// PutKV stamps the indexes as engine.Tx.PutKV will on replay.
func (o *overlay) PutKV(kv engine.KV) engine.KV {
	kv.CreateIndex = o.tx.Index()
	if old, ok := o.GetKV(kv.Key); ok {
		kv.CreateIndex = old.CreateIndex
	}
	kv.ModifyIndex = o.tx.Index()
	stored := kv
	o.kv[kv.Key] = &stored
	o.log = append(o.log, func(tx *engine.Tx) { tx.PutKV(stored) })
	return kv
}

func (o *overlay) DeleteKV(key string) bool {
	if _, ok := o.GetKV(key); !ok {
		return false
	}
	o.kv[key] = nil
	o.log = append(o.log, func(tx *engine.Tx) { tx.DeleteKV(key) })
	return true
}

// ListKV merges the engine's records under prefix with this txn's writes.
// after and limit are not supported (the verbs list whole prefixes).
func (o *overlay) ListKV(prefix, after string, limit int) []engine.KV {
	base := o.tx.ListKV(prefix, "", 0)
	if len(o.kv) == 0 {
		return base
	}
	merged := make(map[string]engine.KV, len(base))
	for _, kv := range base {
		merged[kv.Key] = kv
	}
	for k, kv := range o.kv {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if kv == nil {
			delete(merged, k)
		} else {
			merged[k] = *kv
		}
	}
	out := make([]engine.KV, 0, len(merged))
	for _, kv := range merged {
		out = append(out, kv)
	}
	slices.SortFunc(out, func(a, b engine.KV) int { return strings.Compare(a.Key, b.Key) })
	return out
}

func (o *overlay) setHeld(id, key string, held bool) {
	o.log = append(o.log, func(tx *engine.Tx) { direct{tx}.setHeld(id, key, held) })
}

func (o *overlay) sessionExists(id string) bool {
	_, ok := loadSession(o.tx, id)
	return ok
}

// commit replays the buffered writes onto the engine transaction.
func (o *overlay) commit() {
	for _, w := range o.log {
		w(o.tx)
	}
}
