package consulmodel

import (
	"bytes"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// Get returns the entry of key in tx.
func Get(tx *engine.Tx, key string) (KV, bool, error) {
	r, ok, err := tx.GetRecord(key)
	if err != nil || !ok {
		return KV{}, false, err
	}
	kv, err := fromRecord(r)
	return kv, err == nil, err
}

// List returns every entry whose key starts with prefix, in key order.
func List(tx *engine.Tx, prefix string) ([]KV, error) {
	rs, err := tx.ListRecords(prefix, "", 0)
	if err != nil {
		return nil, err
	}
	out := make([]KV, 0, len(rs))
	for _, r := range rs {
		kv, err := fromRecord(r)
		if err != nil {
			return nil, err
		}
		out = append(out, kv)
	}
	return out, nil
}

// Keys returns every key that starts with prefix, in order; no value is
// decoded.
func Keys(tx *engine.Tx, prefix string) ([]string, error) {
	var keys []string
	err := tx.ScanRecords(prefix, prefix, func(r engine.Record) bool {
		keys = append(keys, r.Key)
		return true
	})
	return keys, err
}

// Put stores kv as given, its indexes stamped by the engine, and returns
// it as stored. It is a raw write: no session bookkeeping, no
// identical-write rule. Tests and tools seed entries with it; Consul's
// verbs go through Model.
func Put(tx *engine.Tx, kv KV) KV {
	stored := tx.PutRecord(toRecord(kv))
	kv.CreateIndex, kv.ModifyIndex = stored.CreateIndex, stored.ModifyIndex
	return kv
}

// KeysIndex is Consul's X-Consul-Index of a list of prefix, or (prefix
// "") of a read of a missing key: the greatest index that changed an
// entry under prefix, deletes included; at least 1, never backwards.
func KeysIndex(tx *engine.Tx, prefix string) uint64 { return tx.KeysIndex(prefix) }

// Scan calls fn with the entries whose key starts with prefix, in key
// order from the first key >= start, until fn returns false. It is the
// read-only cursor of the web console (server/internal/console), which
// skips whole subtrees of the key space by seeking past them; fn decides
// how many entries are read.
func Scan(tx *engine.Tx, prefix, start string, fn func(kv KV) bool) error {
	var err error
	serr := tx.ScanRecords(prefix, start, func(r engine.Record) bool {
		var kv KV
		if kv, err = fromRecord(r); err != nil {
			return false
		}
		kv.Value = bytes.Clone(kv.Value) // r.Data is bbolt's memory
		return fn(kv)
	})
	if serr != nil {
		return serr
	}
	return err
}

// Count counts the entries whose key starts with prefix, stopping at
// limit; more reports whether it stopped there.
func Count(tx *engine.Tx, prefix string, limit int) (n int, more bool) {
	return tx.CountRecords(prefix, limit)
}
