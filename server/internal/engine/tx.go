package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/latchkey/latchkey/internal/keyrange"
	"go.etcd.io/bbolt"
)

// Record is one record of the engine's indexed table: the records whose
// writes consume the Update's index, wake Wait and move KeysIndex. The
// engine stamps CreateIndex and ModifyIndex; Flags and Data belong to the
// layer that keeps its records here (server/internal/consulmodel keeps
// Consul's KV entries) and are stored as given, opaque to the engine.
type Record struct {
	Key         string
	Flags       uint64 // the layer's own word
	CreateIndex uint64
	ModifyIndex uint64
	Data        []byte // the layer's own bytes
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
	// changed a record in it. apply stores it in meta once per batch
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
// not record keys: they never wake Wait (PutRecord and DeleteRecord wake
// those).
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

// GetRecord returns the record of key. A stored record too short to hold
// its indexes is reported as an error (ErrCorrupt), never a panic.
func (tx *Tx) GetRecord(key string) (Record, bool, error) {
	v := tx.btx.Bucket(bucketRecords).Get([]byte(key))
	if v == nil {
		return Record{}, false, nil
	}
	r, err := decodeRecord(key, v, true)
	return r, err == nil, err
}

// PutRecord stores r as given except its indexes: ModifyIndex becomes
// tx.Index(), CreateIndex stays the existing record's (tx.Index() when the
// key is new). It returns the record as stored; its Data is still the
// caller's. Flags and Data are the caller's business.
func (tx *Tx) PutRecord(r Record) Record {
	tx.mustWrite()
	k := []byte(r.Key)
	b := tx.btx.Bucket(bucketRecords)
	r.CreateIndex = tx.index
	if old := b.Get(k); len(old) >= recordHeader {
		r.CreateIndex = getU64(old[8:16])
	}
	r.ModifyIndex = tx.index
	tx.put(bucketRecords, k, encodeRecord(r))
	if tx.btx.Bucket(bucketTomb).Get(k) != nil {
		tx.del(bucketTomb, k)
	}
	tx.recordChanged(r.Key)
	return r
}

// DeleteRecord deletes key and records a tombstone at tx.Index() so that
// KeysIndex of its prefixes moves forward. Deleting a missing key changes
// nothing and returns false.
func (tx *Tx) DeleteRecord(key string) bool {
	k := []byte(key)
	b := tx.btx.Bucket(bucketRecords)
	if b.Get(k) == nil {
		return false
	}
	tx.mustWrite()
	tx.del(bucketRecords, k)
	tx.put(bucketTomb, k, tombstone(tx.index, tx.now))
	tx.recordChanged(key)
	return true
}

func (tx *Tx) recordChanged(key string) {
	tx.changed = true
	tx.touched = append(tx.touched, kvSpace+key)
	*tx.kvIndex = tx.index
}

// ListRecords returns the records whose key starts with prefix and is
// strictly greater than after, in ascending key order, at most limit of
// them (limit <= 0: all).
func (tx *Tx) ListRecords(prefix, after string, limit int) ([]Record, error) {
	var out []Record
	start := prefix
	if after >= prefix {
		start = after + "\x00"
	}
	err := tx.scan(prefix, start, true, func(r Record) bool {
		if limit > 0 && len(out) >= limit {
			return false
		}
		out = append(out, r)
		return true
	})
	return out, err
}

// ScanRecords calls fn with the records whose key starts with prefix, in
// ascending key order from the first key >= start, until fn returns false.
// fn decides how many records are read; it may skip whole subtrees of the
// key space by returning false and scanning again past them. The Data fn
// gets is valid only during the call (it is bbolt's memory): a caller that
// keeps it copies it.
func (tx *Tx) ScanRecords(prefix, start string, fn func(r Record) bool) error {
	return tx.scan(prefix, max(start, prefix), false, fn)
}

// CountRecords counts the records whose key starts with prefix, stopping
// at limit; it reports whether it stopped there (the count is then a lower
// bound). Nothing is decoded.
func (tx *Tx) CountRecords(prefix string, limit int) (n int, more bool) {
	return keyrange.Count(tx.btx.Bucket(bucketRecords).Cursor(), []byte(prefix), limit)
}

func (tx *Tx) scan(prefix, start string, copyData bool, fn func(r Record) bool) error {
	c := tx.btx.Bucket(bucketRecords).Cursor()
	for k, v := c.Seek([]byte(start)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
		r, err := decodeRecord(string(k), v, copyData)
		if err != nil {
			return err
		}
		if !fn(r) {
			return nil
		}
	}
	return nil
}

// KeysIndex is the index of a prefix of the records: the greatest
// ModifyIndex or tombstone index under prefix; for the empty prefix, the
// last index that changed any record. Never less than 1, never backwards
// (Consul's X-Consul-Index of a list, or of a read of a missing key).
func (tx *Tx) KeysIndex(prefix string) uint64 {
	var top uint64
	if prefix == "" {
		top = getU64(tx.btx.Bucket(bucketMeta).Get(keyKVIndex))
		if tx.kvIndex != nil { // an earlier Update of this batch
			top = max(top, *tx.kvIndex)
		}
	} else {
		p := []byte(prefix)
		c := tx.btx.Bucket(bucketRecords).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if len(v) >= recordHeader {
				top = max(top, getU64(v[16:24]))
			}
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
// PutRecord or DeleteRecord, but if its fn then fails, the whole batch is retried
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

// recordHeader is the length of a record's header: flags, create,
// modify, 8 bytes each, big endian. Data follows.
const recordHeader = 24

func encodeRecord(r Record) []byte {
	b := make([]byte, recordHeader, recordHeader+len(r.Data))
	binary.BigEndian.PutUint64(b[0:], r.Flags)
	binary.BigEndian.PutUint64(b[8:], r.CreateIndex)
	binary.BigEndian.PutUint64(b[16:], r.ModifyIndex)
	return append(b, r.Data...)
}

// ErrCorrupt is returned when a stored record cannot be read.
var ErrCorrupt = errors.New("engine: corrupt record")

// decodeRecord reads a stored record; copyData false leaves Data in
// bbolt's memory (valid only inside the transaction).
func decodeRecord(key string, b []byte, copyData bool) (Record, error) {
	if len(b) < recordHeader {
		return Record{}, fmt.Errorf("%w %q: %d bytes", ErrCorrupt, key, len(b))
	}
	r := Record{
		Key:         key,
		Flags:       getU64(b[0:8]),
		CreateIndex: getU64(b[8:16]),
		ModifyIndex: getU64(b[16:24]),
		Data:        b[recordHeader:],
	}
	if copyData {
		r.Data = bytes.Clone(r.Data)
	}
	return r, nil
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
