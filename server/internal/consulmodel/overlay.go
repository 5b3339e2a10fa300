package consulmodel

import (
	"slices"
	"strings"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// kvTx is what the KV verbs need from a transaction. direct is the engine
// transaction itself; overlay buffers the writes of a /v1/txn so that they
// reach the engine only once every op has succeeded.
type kvTx interface {
	get(key string) (KV, bool, error)
	// put stores kv and returns it with the indexes it was stored at.
	put(kv KV) (KV, error)
	del(key string) (bool, error)
	list(prefix string) ([]KV, error)
	// setHeld records (held) or forgets that session id holds key.
	setHeld(id, key string, held bool) error
	sessionExists(id string) (bool, error)
}

// direct applies straight to the engine transaction.
type direct struct{ tx *engine.Tx }

func (d direct) get(key string) (KV, bool, error) { return Get(d.tx, key) }

func (d direct) put(kv KV) (KV, error) { return Put(d.tx, kv), nil }

func (d direct) del(key string) (bool, error) { return d.tx.DeleteRecord(key), nil }

func (d direct) list(prefix string) ([]KV, error) { return List(d.tx, prefix) }

func (d direct) setHeld(id, key string, held bool) error { return setHeld(d.tx, id, key, held) }

func (d direct) sessionExists(id string) (bool, error) {
	_, ok, err := LoadSession(d.tx, id)
	return ok, err
}

// overlay reads through to tx and keeps its own writes in memory, so a txn
// whose op fails writes nothing: engine.Update then fails without having
// written, which is cheap for the engine (no batch re-run) and leaves the
// other Updates of the batch alone. commit replays the writes, in order.
type overlay struct {
	tx  *engine.Tx
	kv  map[string]*KV // nil: deleted in this txn
	log []func(direct) error
}

func newOverlay(tx *engine.Tx) *overlay {
	return &overlay{tx: tx, kv: map[string]*KV{}}
}

func (o *overlay) get(key string) (KV, bool, error) {
	if kv, ok := o.kv[key]; ok {
		if kv == nil {
			return KV{}, false, nil
		}
		return *kv, true, nil
	}
	return Get(o.tx, key)
}

// put stamps the indexes as the engine's PutRecord will on replay.
func (o *overlay) put(kv KV) (KV, error) {
	kv.CreateIndex = o.tx.Index()
	old, ok, err := o.get(kv.Key)
	if err != nil {
		return KV{}, err
	}
	if ok {
		kv.CreateIndex = old.CreateIndex
	}
	kv.ModifyIndex = o.tx.Index()
	stored := kv
	o.kv[kv.Key] = &stored
	o.log = append(o.log, func(d direct) error { _, err := d.put(stored); return err })
	return kv, nil
}

func (o *overlay) del(key string) (bool, error) {
	if _, ok, err := o.get(key); err != nil || !ok {
		return false, err
	}
	o.kv[key] = nil
	o.log = append(o.log, func(d direct) error { _, err := d.del(key); return err })
	return true, nil
}

// list merges the engine's entries under prefix with this txn's writes.
func (o *overlay) list(prefix string) ([]KV, error) {
	base, err := List(o.tx, prefix)
	if err != nil || len(o.kv) == 0 {
		return base, err
	}
	merged := make(map[string]KV, len(base))
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
	out := make([]KV, 0, len(merged))
	for _, kv := range merged {
		out = append(out, kv)
	}
	slices.SortFunc(out, func(a, b KV) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (o *overlay) setHeld(id, key string, held bool) error {
	o.log = append(o.log, func(d direct) error { return d.setHeld(id, key, held) })
	return nil
}

func (o *overlay) sessionExists(id string) (bool, error) { return direct{o.tx}.sessionExists(id) }

// commit replays the buffered writes onto the engine transaction.
func (o *overlay) commit() error {
	d := direct{o.tx}
	for _, w := range o.log {
		if err := w(d); err != nil {
			return err
		}
	}
	return nil
}
