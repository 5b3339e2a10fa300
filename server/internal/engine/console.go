package engine

import (
	"bytes"
	"fmt"

	"github.com/latchkey/latchkey/internal/keyrange"
)

// ScanKV calls fn with the records whose key starts with prefix, in
// ascending key order from the first key >= start, until fn returns false.
// It is the read-only cursor of the web console (server/internal/console), which
// skips whole subtrees of the key space by seeking past them; fn decides
// how many records are read.
func (tx *Tx) ScanKV(prefix, start string, fn func(kv KV) bool) {
	if start < prefix {
		start = prefix
	}
	c := tx.btx.Bucket(bucketKV).Cursor()
	for k, v := c.Seek([]byte(start)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
		kv, err := decodeKV(string(k), v)
		if err != nil {
			panic(fmt.Sprintf("engine: corrupt record %q: %v", k, err))
		}
		if !fn(kv) {
			return
		}
	}
}

// CountKV counts the records whose key starts with prefix, stopping at
// limit; it reports whether it stopped there (the count is then a lower
// bound). Values are not decoded.
func (tx *Tx) CountKV(prefix string, limit int) (n int, more bool) {
	return keyrange.Count(tx.btx.Bucket(bucketKV).Cursor(), []byte(prefix), limit)
}
