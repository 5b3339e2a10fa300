package s3api

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"github.com/latchkey/latchkey/internal/engine"
)

// Metadata lives in raw engine buckets (the engine namespaces them):
//
//	s3b  bucket name                          → bucketRec
//	s3v  bucket "/" key "\x00" ^index (8 BE)  → version (object or marker), newest first
//	s3d  same key as s3v                      → inline body of a small object
//	s3m  bucket "/" key                       → index of the key's last mutation (8 BE)
//	s3u  bucket "/" key "\x00" uploadID       → uploadRec
//	s3p  uploadID "/" partNumber (4 BE)       → partRec
//
// Bucket names cannot contain "/" and keys cannot contain NUL, so every
// composite key is unambiguous and s3v sorts by object key, then newest
// version first. The current version of a key is its first s3v entry.
const (
	tblBuckets  = "s3b"
	tblVersions = "s3v"
	tblData     = "s3d"
	tblMod      = "s3m"
	tblUploads  = "s3u"
	tblParts    = "s3p"
)

// nullVersion is the version ID of objects written while versioning is not
// enabled.
const nullVersion = "null"

// Versioning states of a bucket.
const (
	versioningOff       = ""
	versioningEnabled   = "Enabled"
	versioningSuspended = "Suspended"
)

type bucketRec struct {
	Created    int64  `json:"c"` // unix nanoseconds
	Versioning string `json:"v,omitempty"`
}

// segment is one blob of an object's body; a multipart object has one per
// part, in order.
type segment struct {
	Blob string `json:"b"`
	Size int64  `json:"s"`
}

// version is one version of one key: an object or a delete marker.
type version struct {
	VersionID   string            `json:"id"`
	Marker      bool              `json:"dm,omitempty"`
	ETag        string            `json:"e,omitempty"`
	Size        int64             `json:"s,omitempty"`
	Modified    int64             `json:"t"` // unix nanoseconds
	Index       uint64            `json:"i"` // engine index of the write
	ContentType string            `json:"ct,omitempty"`
	Meta        map[string]string `json:"m,omitempty"` // lower-case names without "x-amz-meta-"
	Headers     map[string]string `json:"h,omitempty"` // Cache-Control, Content-Disposition, ...
	Inline      bool              `json:"in,omitempty"`
	Segments    []segment         `json:"seg,omitempty"`
	Parts       int               `json:"pc,omitempty"` // multipart part count
	Tags        map[string]string `json:"tg,omitempty"` // object tags
	Upload      string            `json:"up,omitempty"` // the multipart upload it completed
	Checksum    *objectChecksum   `json:"ck,omitempty"`
	PartSums    []string          `json:"pck,omitempty"` // multipart: each part's checksum (Checksum.Alg)
}

func (v *version) modTime() time.Time { return time.Unix(0, v.Modified).UTC() }

func (v *version) blobs() []string {
	out := make([]string, 0, len(v.Segments))
	for _, s := range v.Segments {
		out = append(out, s.Blob)
	}
	return out
}

type uploadRec struct {
	Initiated   int64             `json:"t"`
	ContentType string            `json:"ct,omitempty"`
	Meta        map[string]string `json:"m,omitempty"`
	Headers     map[string]string `json:"h,omitempty"`
	Snapshot    uint64            `json:"snap"` // s3m of the key at create
	Tags        map[string]string `json:"tg,omitempty"`
	ChecksumAlg string            `json:"ca,omitempty"` // x-amz-checksum-algorithm, lower case
	ChecksumTyp string            `json:"cty,omitempty"`
}

type partRec struct {
	ETag     string          `json:"e"`
	Size     int64           `json:"s"`
	Modified int64           `json:"t"`
	Blob     string          `json:"b"`
	Checksum *objectChecksum `json:"ck,omitempty"`
}

// versionID encodes an engine index so that IDs sort newest first.
func versionID(index uint64) string { return fmt.Sprintf("%016x", ^index) }

// parseVersionID returns the index a version ID names; "null" is handled
// by the caller.
func parseVersionID(id string) (uint64, bool) {
	if len(id) != 16 {
		return 0, false
	}
	b, err := hex.DecodeString(id)
	if err != nil {
		return 0, false
	}
	return ^binary.BigEndian.Uint64(b), true
}

func keyPrefix(bucket, key string) []byte { return []byte(bucket + "/" + key + "\x00") }

func versionKey(bucket, key string, index uint64) []byte {
	return binary.BigEndian.AppendUint64(keyPrefix(bucket, key), ^index)
}

func modKey(bucket, key string) []byte { return []byte(bucket + "/" + key) }

func uploadKey(bucket, key, uploadID string) []byte {
	return append(keyPrefix(bucket, key), uploadID...)
}

func partKey(uploadID string, n int) []byte {
	return binary.BigEndian.AppendUint32([]byte(uploadID+"/"), uint32(n))
}

// splitVersionKey returns the object key and index of an s3v key under
// bucket prefix bp (bucket + "/").
func splitVersionKey(k []byte, bp int) (string, uint64, bool) {
	if len(k) < bp+9 || k[len(k)-9] != 0 {
		return "", 0, false
	}
	return string(k[bp : len(k)-9]), ^binary.BigEndian.Uint64(k[len(k)-8:]), true
}

func decode[T any](b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("s3api: encode record: %v", err))
	}
	return b
}

// store reads and writes the S3 records of one transaction.
type store struct {
	tx *engine.Tx
	// keep, when set, reports whether a conditional write is in flight on
	// "bucket/key", whose mutation record tidyMod must then keep.
	keep func(string) bool
}

// store returns the record layer of tx for writes that may tidy a key's
// mutation record.
func (h *Handler) store(tx *engine.Tx) store {
	return store{tx: tx, keep: h.inflight.holds}
}

func (s store) rb(name string) *bbolt.Bucket { return s.tx.ReadBucket(name) }

func (s store) bucket(name string) (bucketRec, bool, error) {
	b := s.rb(tblBuckets)
	if b == nil {
		return bucketRec{}, false, nil
	}
	v := b.Get([]byte(name))
	if v == nil {
		return bucketRec{}, false, nil
	}
	rec, err := decode[bucketRec](v)
	return rec, err == nil, err
}

// mustBucket returns the bucket or NoSuchBucket.
func (s store) mustBucket(name string) (bucketRec, error) {
	rec, ok, err := s.bucket(name)
	if err != nil {
		return rec, err
	}
	if !ok {
		return rec, errNoSuchBucket(name)
	}
	return rec, nil
}

// current returns the key's newest version (object or marker).
func (s store) current(bucket, key string) (version, bool, error) {
	b := s.rb(tblVersions)
	if b == nil {
		return version{}, false, nil
	}
	p := keyPrefix(bucket, key)
	k, v := b.Cursor().Seek(p)
	if k == nil || !bytes.HasPrefix(k, p) {
		return version{}, false, nil
	}
	rec, err := decode[version](v)
	return rec, err == nil, err
}

// versions returns every version of key, newest first.
func (s store) versions(bucket, key string) ([]version, error) {
	b := s.rb(tblVersions)
	if b == nil {
		return nil, nil
	}
	p := keyPrefix(bucket, key)
	var out []version
	c := b.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		rec, err := decode[version](v)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// versionByID finds one version of key; "null" is searched for.
func (s store) versionByID(bucket, key, id string) (version, bool, error) {
	if id == nullVersion {
		vs, err := s.versions(bucket, key)
		for _, v := range vs {
			if v.VersionID == nullVersion {
				return v, true, err
			}
		}
		return version{}, false, err
	}
	idx, ok := parseVersionID(id)
	b := s.rb(tblVersions)
	if !ok || b == nil {
		return version{}, false, nil
	}
	v := b.Get(versionKey(bucket, key, idx))
	if v == nil {
		return version{}, false, nil
	}
	rec, err := decode[version](v)
	return rec, err == nil, err
}

// inline returns the inline body of a version.
func (s store) inline(bucket, key string, v version) []byte {
	b := s.rb(tblData)
	if b == nil {
		return nil
	}
	return bytes.Clone(b.Get(versionKey(bucket, key, v.Index)))
}

// mod is the key's last-mutation index (0 when unknown).
func (s store) mod(bucket, key string) uint64 {
	b := s.rb(tblMod)
	if b == nil {
		return 0
	}
	v := b.Get(modKey(bucket, key))
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// state is the key as write preconditions see it.
func (s store) state(bucket, key string) (current, error) {
	cur, ok, err := s.current(bucket, key)
	if err != nil {
		return current{}, err
	}
	st := current{Mod: s.mod(bucket, key)}
	if ok && !cur.Marker {
		st.Exists, st.ETag = true, cur.ETag
	}
	return st, nil
}

func (s store) hasUploads(bucket, key string) bool {
	b := s.rb(tblUploads)
	if b == nil {
		return false
	}
	p := keyPrefix(bucket, key)
	k, _ := b.Cursor().Seek(p)
	return k != nil && bytes.HasPrefix(k, p)
}

// --- writes (Update only) ---

// putVersion publishes v as the key's newest version according to the
// bucket's versioning state, and returns the blobs of versions it replaced
// (to remove after commit). data is the inline body, or nil.
func (s store) putVersion(bucket, key, versioning string, v version, data []byte) []string {
	var dropped []string
	idx := s.tx.Index()
	v.Index = idx
	if versioning == versioningEnabled {
		v.VersionID = versionID(idx)
	} else {
		v.VersionID = nullVersion
		if old, ok, _ := s.versionByID(bucket, key, nullVersion); ok {
			dropped = append(dropped, s.removeVersion(bucket, key, old)...)
		}
	}
	vk := versionKey(bucket, key, idx)
	if err := s.tx.Bucket(tblVersions).Put(vk, mustJSON(v)); err != nil {
		panic(err)
	}
	if v.Inline {
		if err := s.tx.Bucket(tblData).Put(vk, data); err != nil {
			panic(err)
		}
	}
	s.touch(bucket, key)
	return dropped
}

// removeVersion deletes one version record and returns its blobs.
func (s store) removeVersion(bucket, key string, v version) []string {
	vk := versionKey(bucket, key, v.Index)
	if err := s.tx.Bucket(tblVersions).Delete(vk); err != nil {
		panic(err)
	}
	if v.Inline {
		if err := s.tx.Bucket(tblData).Delete(vk); err != nil {
			panic(err)
		}
	}
	s.touch(bucket, key)
	return v.blobs()
}

// touch records a mutation of the key: it consumes the Update's index and
// keeps the key's last-mutation index for the multipart 409 rule. The
// record is dropped when nothing (no version, no upload) needs it.
func (s store) touch(bucket, key string) {
	s.tx.Touch("\x00s3/" + bucket + "/" + key)
	mb := s.tx.Bucket(tblMod)
	if err := mb.Put(modKey(bucket, key), binary.BigEndian.AppendUint64(nil, s.tx.Index())); err != nil {
		panic(err)
	}
}

// tidyMod drops the key's mutation record when no version, no upload and
// no in-flight conditional write needs it, so deleted keys leave nothing
// behind.
func (s store) tidyMod(bucket, key string) {
	if _, ok, _ := s.current(bucket, key); ok || s.hasUploads(bucket, key) {
		return
	}
	if s.keep != nil && s.keep(bucket+"/"+key) {
		return
	}
	if err := s.tx.Bucket(tblMod).Delete(modKey(bucket, key)); err != nil {
		panic(err)
	}
}

// validKeyChars rejects keys the storage layout cannot hold.
func validKeyChars(key string) bool { return !strings.ContainsRune(key, 0) }
