package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"
)

// A tombstone records that a key was deleted at an index: index and
// deletion time (unix ns), 8 bytes each, big endian.
func tombstone(index uint64, now int64) []byte {
	b := binary.BigEndian.AppendUint64(nil, index)
	return binary.BigEndian.AppendUint64(b, uint64(now))
}

// maxReap bounds the tombstones one reaping pass looks at, so the write
// transaction it holds stays short.
const maxReap = 10000

// reaper removes expired tombstones every TombstoneTTL/4 until Close.
func (e *Engine) reaper() {
	tick := time.NewTicker(e.opts.TombstoneTTL / 4)
	defer tick.Stop()
	var from []byte
	for {
		select {
		case <-e.stop:
			return
		case <-tick.C:
			var err error
			if from, err = e.reap(from); err != nil {
				return // closed
			}
		}
	}
}

// reap looks at up to maxReap tombstones from key from on, removes those
// older than the TTL and raises the floor to their greatest index. It
// returns where the next pass starts (nil: from the beginning).
func (e *Engine) reap(from []byte) ([]byte, error) {
	var next []byte
	_, err := e.Update(context.Background(), func(tx *Tx) error {
		next = nil
		cutoff := tx.now - int64(e.opts.TombstoneTTL)
		b := tx.btx.Bucket(bucketTomb)
		meta := tx.btx.Bucket(bucketMeta)
		floor := getU64(meta.Get(keyTombFloor))
		var dead [][]byte
		c := b.Cursor()
		n := 0
		for k, v := c.Seek(from); k != nil; k, v = c.Next() {
			if n++; n > maxReap {
				next = bytes.Clone(k)
				break
			}
			if len(v) == 16 && int64(getU64(v[8:])) < cutoff {
				dead = append(dead, bytes.Clone(k))
				floor = max(floor, getU64(v[:8]))
			}
		}
		if len(dead) == 0 {
			return nil
		}
		tx.dirty = true
		for _, k := range dead {
			tx.del(bucketTomb, k)
		}
		tx.put(bucketMeta, keyTombFloor, u64(floor))
		return nil
	})
	return next, err
}
