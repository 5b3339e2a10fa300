package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"
)

// KV is one Consul-style key-value record.
type KV struct {
	Key         string
	Value       []byte
	Flags       uint64
	CreateIndex uint64
	ModifyIndex uint64
	LockIndex   uint64
	Session     string // holder session id; "" when unlocked
}

// Tx is one read (View) or write (Update) transaction. It is valid only
// inside the function it was passed to. Values returned by its methods are
// copies and stay valid afterwards.
type Tx struct {
	btx     *bbolt.Tx
	index   uint64
	write   bool
	dirty   bool      // wrote something (or obtained a raw bucket for writing)
	changed bool      // consumed its index
	touched []string  // keys to wake watchers of
	now     int64     // commit time (unix ns), stamped on tombstones
	log     *walBatch // inside Update with the log: every write, for the log record
	// kvIndex is shared by the Updates of one batch: the last index that
	// changed a KV record in it. apply stores it in meta once per batch
	// instead of once per Update; KeysIndex("") reads it as well.
	kvIndex *uint64
}

// put writes key=value in the engine bucket name and records it for the
// log; del deletes key the same way.
func (tx *Tx) put(name []byte, key, value []byte) {
	must(tx.btx.Bucket(name).Put(key, value))
	if tx.log != nil {
		tx.log.put(string(name), key, value)
	}
}

func (tx *Tx) del(name []byte, key []byte) {
	must(tx.btx.Bucket(name).Delete(key))
	if tx.log != nil {
		tx.log.del(string(name), key)
	}
}

// Index is this write's index inside Update, or the latest committed
// index of the snapshot inside View (read when first asked for: most
// Views never ask).
func (tx *Tx) Index() uint64 {
	if tx.index == 0 && !tx.write {
		tx.index = getU64(tx.btx.Bucket(bucketMeta).Get(keyIndex))
	}
	return tx.index
}

// Writable reports whether tx is an Update transaction.
func (tx *Tx) Writable() bool { return tx.write }

// Touch marks name as changed by this transaction, so that WaitTouched
// callers whose prefix covers name wake after commit; it also makes the
// Update consume its index. Layers using raw buckets call Touch with a
// name of their own (for example "\x00session/<id>"). Touched names are
// not KV keys: they never wake Wait (PutKV and DeleteKV wake those).
func (tx *Tx) Touch(name string) {
	tx.mustWrite()
	tx.changed = true
	tx.touched = append(tx.touched, touchSpace+name)
}

func (tx *Tx) mustWrite() {
	if !tx.write {
		panic("engine: write inside View")
	}
	tx.dirty = true
}

// GetKV returns the record of key.
func (tx *Tx) GetKV(key string) (KV, bool) {
	v := tx.btx.Bucket(bucketKV).Get([]byte(key))
	if v == nil {
		return KV{}, false
	}
	kv, err := decodeKV(key, v)
	if err != nil {
		panic(fmt.Sprintf("engine: corrupt record %q: %v", key, err))
	}
	return kv, true
}

// PutKV stores kv as given except its indexes: ModifyIndex becomes
// tx.Index(), CreateIndex stays the existing record's (tx.Index() when the
// key is new). It returns the record as stored. Flags, LockIndex and
// Session are the caller's business.
func (tx *Tx) PutKV(kv KV) KV {
	tx.mustWrite()
	k := []byte(kv.Key)
	b := tx.btx.Bucket(bucketKV)
	kv.CreateIndex = tx.index
	if old := b.Get(k); old != nil {
		kv.CreateIndex = getU64(old[8:16])
	}
	kv.ModifyIndex = tx.index
	kv.Value = bytes.Clone(kv.Value)
	tx.put(bucketKV, k, encodeKV(kv))
	if tx.btx.Bucket(bucketTomb).Get(k) != nil {
		tx.del(bucketTomb, k)
	}
	tx.kvChanged(kv.Key)
	return kv
}

// DeleteKV deletes key and records a tombstone at tx.Index() so that
// KeysIndex of its prefixes moves forward. Deleting a missing key changes
// nothing and returns false.
func (tx *Tx) DeleteKV(key string) bool {
	k := []byte(key)
	b := tx.btx.Bucket(bucketKV)
	if b.Get(k) == nil {
		return false
	}
	tx.mustWrite()
	tx.del(bucketKV, k)
	tx.put(bucketTomb, k, tombstone(tx.index, tx.now))
	tx.kvChanged(key)
	return true
}

func (tx *Tx) kvChanged(key string) {
	tx.changed = true
	tx.touched = append(tx.touched, kvSpace+key)
	*tx.kvIndex = tx.index
}

// ListKV returns the records whose key starts with prefix and is strictly
// greater than after, in ascending key order, at most limit of them
// (limit <= 0: all).
func (tx *Tx) ListKV(prefix, after string, limit int) []KV {
	var out []KV
	c := tx.btx.Bucket(bucketKV).Cursor()
	start := prefix
	if after >= prefix {
		start = after + "\x00"
	}
	for k, v := c.Seek([]byte(start)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
		if limit > 0 && len(out) >= limit {
			break
		}
		kv, err := decodeKV(string(k), v)
		if err != nil {
			panic(fmt.Sprintf("engine: corrupt record %q: %v", k, err))
		}
		out = append(out, kv)
	}
	return out
}

// KeysIndex is Consul's X-Consul-Index for a list of prefix or a read of a
// missing key: the greatest ModifyIndex or tombstone index under prefix;
// for the empty prefix, the last index that changed any KV record. Never
// less than 1.
func (tx *Tx) KeysIndex(prefix string) uint64 {
	var top uint64
	if prefix == "" {
		top = getU64(tx.btx.Bucket(bucketMeta).Get(keyKVIndex))
		if tx.kvIndex != nil { // an earlier Update of this batch
			top = max(top, *tx.kvIndex)
		}
	} else {
		p := []byte(prefix)
		c := tx.btx.Bucket(bucketKV).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			top = max(top, getU64(v[16:24]))
		}
		c = tx.btx.Bucket(bucketTomb).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			top = max(top, getU64(v[:8]))
		}
	}
	// Reaped tombstones leave their greatest index behind as a floor, so
	// that no prefix's index ever goes backwards.
	top = max(top, getU64(tx.btx.Bucket(bucketMeta).Get(keyTombFloor)))
	return max(top, 1)
}

// Bucket returns the raw bucket name of another layer (sessions, S3
// metadata), creating it inside Update. Obtaining it inside Update counts
// as a write: the Update consumes an index only if it also calls Touch,
// PutKV or DeleteKV, but if its fn then fails, the whole batch is retried
// without it. Inside View it returns nil when the bucket does not exist.
// Use ReadBucket for reads inside Update.
func (tx *Tx) Bucket(name string) *Bucket {
	full := []byte(rawPrefix + name)
	if !tx.write {
		b := tx.btx.Bucket(full)
		if b == nil {
			return nil
		}
		return &Bucket{b: b, name: string(full)}
	}
	tx.mustWrite()
	b := tx.btx.Bucket(full)
	if b == nil {
		var err error
		b, err = tx.btx.CreateBucket(full)
		must(err)
		if tx.log != nil {
			tx.log.create(string(full))
		}
	}
	return &Bucket{b: b, name: string(full), log: tx.log}
}

// ReadBucket returns the raw bucket name for reading, or nil when it does
// not exist. It never counts as a write, and writes through it are refused
// with ErrReadOnlyBucket (they would bypass the write-ahead log and not
// survive a crash).
func (tx *Tx) ReadBucket(name string) *Bucket {
	full := rawPrefix + name
	b := tx.btx.Bucket([]byte(full))
	if b == nil {
		return nil
	}
	return &Bucket{b: b, name: full, readOnly: true}
}

// ErrReadOnlyBucket is returned by a write through a bucket from
// Tx.ReadBucket.
var ErrReadOnlyBucket = errors.New("engine: write through a bucket opened with ReadBucket")

// Bucket is a raw bucket of another layer, from Tx.Bucket. Its methods are
// bbolt's; its writes are also recorded for the write-ahead log, so that
// a crash before the next checkpoint replays them.
type Bucket struct {
	b        *bbolt.Bucket
	name     string
	log      *walBatch // nil: not logged (a View, or no log)
	readOnly bool      // from ReadBucket: writes are refused
}

// Get is bbolt's Bucket.Get.
func (b *Bucket) Get(key []byte) []byte { return b.b.Get(key) }

// Put is bbolt's Bucket.Put. As there, value must not change until the
// transaction ends.
func (b *Bucket) Put(key, value []byte) error {
	if b.readOnly {
		return ErrReadOnlyBucket
	}
	if err := b.b.Put(key, value); err != nil {
		return err
	}
	if b.log != nil {
		b.log.put(b.name, key, value)
	}
	return nil
}

// Delete is bbolt's Bucket.Delete.
func (b *Bucket) Delete(key []byte) error {
	if b.readOnly {
		return ErrReadOnlyBucket
	}
	if err := b.b.Delete(key); err != nil {
		return err
	}
	if b.log != nil {
		b.log.del(b.name, key)
	}
	return nil
}

// ForEach is bbolt's Bucket.ForEach.
func (b *Bucket) ForEach(fn func(k, v []byte) error) error { return b.b.ForEach(fn) }

// Cursor is bbolt's Bucket.Cursor; Cursor.Delete is recorded for the log.
func (b *Bucket) Cursor() *Cursor { return &Cursor{c: b.b.Cursor(), b: b} }

// Cursor is bbolt's Cursor over a Bucket.
type Cursor struct {
	c   *bbolt.Cursor
	b   *Bucket
	key []byte // the current key, for Delete
}

func (c *Cursor) at(k, v []byte) ([]byte, []byte) { c.key = k; return k, v }

// First is bbolt's Cursor.First.
func (c *Cursor) First() ([]byte, []byte) { return c.at(c.c.First()) }

// Last is bbolt's Cursor.Last.
func (c *Cursor) Last() ([]byte, []byte) { return c.at(c.c.Last()) }

// Next is bbolt's Cursor.Next.
func (c *Cursor) Next() ([]byte, []byte) { return c.at(c.c.Next()) }

// Prev is bbolt's Cursor.Prev.
func (c *Cursor) Prev() ([]byte, []byte) { return c.at(c.c.Prev()) }

// Seek is bbolt's Cursor.Seek.
func (c *Cursor) Seek(seek []byte) ([]byte, []byte) { return c.at(c.c.Seek(seek)) }

// Delete is bbolt's Cursor.Delete: it removes the current key.
func (c *Cursor) Delete() error {
	if c.b.readOnly {
		return ErrReadOnlyBucket
	}
	k := append([]byte(nil), c.key...)
	if err := c.c.Delete(); err != nil {
		return err
	}
	if c.b.log != nil {
		c.b.log.del(c.b.name, k)
	}
	return nil
}

// Record layout: flags, create, modify, lock (8 bytes each, big endian),
// uvarint session length, session, value.
func encodeKV(kv KV) []byte {
	b := make([]byte, 32, 32+binary.MaxVarintLen64+len(kv.Session)+len(kv.Value))
	binary.BigEndian.PutUint64(b[0:], kv.Flags)
	binary.BigEndian.PutUint64(b[8:], kv.CreateIndex)
	binary.BigEndian.PutUint64(b[16:], kv.ModifyIndex)
	binary.BigEndian.PutUint64(b[24:], kv.LockIndex)
	b = binary.AppendUvarint(b, uint64(len(kv.Session)))
	b = append(b, kv.Session...)
	return append(b, kv.Value...)
}

var errCorrupt = errors.New("bad record")

func decodeKV(key string, b []byte) (KV, error) {
	if len(b) < 33 {
		return KV{}, errCorrupt
	}
	kv := KV{
		Key:         key,
		Flags:       getU64(b[0:8]),
		CreateIndex: getU64(b[8:16]),
		ModifyIndex: getU64(b[16:24]),
		LockIndex:   getU64(b[24:32]),
	}
	n, w := binary.Uvarint(b[32:])
	if w <= 0 || uint64(len(b)-32-w) < n {
		return KV{}, errCorrupt
	}
	rest := b[32+w:]
	kv.Session = string(rest[:n])
	if v := rest[n:]; len(v) > 0 {
		kv.Value = bytes.Clone(v)
	}
	return kv, nil
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func getU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// must panics on a bbolt error inside a transaction; the batch runner
// recovers it, rolls the transaction back and fails that Update.
func must(err error) {
	if err != nil {
		panic(bboltError{err})
	}
}

type bboltError struct{ err error }
