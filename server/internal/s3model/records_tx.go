package s3model

import (
	"bytes"
	"encoding/binary"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// records reads and writes the S3 records of one engine transaction. Every
// table access of the model goes through it.
type records struct {
	tx *engine.Tx
	// keep, when set, reports whether a conditional write is in flight on
	// "bucket/key", whose mutation record tidyMod must then keep.
	keep func(string) bool
	// keyID is the SSE master key's ID, recorded by a write of a sealed
	// body (noteKey).
	keyID string

	// tables caches the tables opened in this transaction (index: tableIndex),
	// written marks those opened for writing.
	tables  [numTables]table
	written [numTables]bool
}

// read returns a table for reading (nil when it does not exist), opened
// once per transaction.
func (s *records) read(name string) table {
	i := tableIndex(name)
	if s.tables[i] == nil {
		s.tables[i] = readTable(s.tx, name)
	}
	return s.tables[i]
}

// write returns a table for writing (Update only), creating it.
func (s *records) write(name string) table {
	i := tableIndex(name)
	if !s.written[i] {
		s.tables[i], s.written[i] = writeTable(s.tx, name), true
	}
	return s.tables[i]
}

func (s *records) bucket(name string) (Bucket, bool, error) {
	b := s.read(tblBuckets)
	if b == nil {
		return Bucket{}, false, nil
	}
	v := b.Get([]byte(name))
	if v == nil {
		return Bucket{}, false, nil
	}
	if rec, ok := parseBucket(v); ok {
		return rec, true, nil
	}
	rec, err := decode[Bucket](v)
	return rec, err == nil, err
}

// mustBucket returns the bucket or ErrNoSuchBucket.
func (s *records) mustBucket(name string) (Bucket, error) {
	rec, ok, err := s.bucket(name)
	if err != nil {
		return rec, err
	}
	if !ok {
		return rec, noSuchBucket(name)
	}
	return rec, nil
}

// putBucket writes bucket name's record and wakes its watchers.
func (s *records) putBucket(name string, rec Bucket) {
	mustPut(s.write(tblBuckets), []byte(name), mustJSON(rec))
	s.tx.Touch(bucketWatch(name))
}

// bucketWatch is the engine watch name of one bucket.
func bucketWatch(name string) string { return "\x00s3/" + name }

// current returns the key's newest version (object or marker).
func (s *records) current(bucket, key string) (Version, bool, error) {
	b := s.read(tblVersions)
	if b == nil {
		return Version{}, false, nil
	}
	p := keyPrefix(bucket, key)
	k, v := b.Cursor().Seek(p)
	if k == nil || !bytes.HasPrefix(k, p) {
		return Version{}, false, nil
	}
	rec, err := decode[Version](v)
	return rec, err == nil, err
}

// versions returns every version of key, newest first.
func (s *records) versions(bucket, key string) ([]Version, error) {
	b := s.read(tblVersions)
	if b == nil {
		return nil, nil
	}
	p := keyPrefix(bucket, key)
	var out []Version
	c := b.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		rec, err := decode[Version](v)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// versionByID finds one version of key; NullVersion is searched for.
func (s *records) versionByID(bucket, key, id string) (Version, bool, error) {
	if id == NullVersion {
		vs, err := s.versions(bucket, key)
		for _, v := range vs {
			if v.VersionID == NullVersion {
				return v, true, err
			}
		}
		return Version{}, false, err
	}
	idx, ok := ParseVersionID(id)
	if !ok {
		return Version{}, false, nil
	}
	return getRecord[Version](s.read(tblVersions), versionKey(bucket, key, idx))
}

// find returns the version a request addresses (the current one, or
// versionID when byID), refusing a missing key, a missing version and a
// delete marker.
func (s *records) find(bucket, key, versionID string, byID bool) (Version, error) {
	var (
		v   Version
		ok  bool
		err error
	)
	if byID {
		v, ok, err = s.versionByID(bucket, key, versionID)
	} else {
		v, ok, err = s.current(bucket, key)
	}
	if err != nil {
		return v, err
	}
	e := &Error{Bucket: bucket, Key: key, VersionID: versionID}
	switch {
	case !ok && byID:
		e.Err = ErrNoSuchVersion
	case !ok:
		e.Err = ErrNoSuchKey
	case v.Marker && byID:
		e.Err, e.Marker = ErrDeleteMarker, &v
	case v.Marker:
		e.Err, e.Marker = ErrNoSuchKey, &v
	default:
		return v, nil
	}
	return v, e
}

// inline returns the inline body of a version.
func (s *records) inline(bucket, key string, v Version) []byte {
	b := s.read(tblData)
	if b == nil {
		return nil
	}
	return bytes.Clone(b.Get(versionKey(bucket, key, v.Index)))
}

// mod is the key's last-mutation index (0 when unknown).
func (s *records) mod(bucket, key string) uint64 {
	b := s.read(tblMod)
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
func (s *records) state(bucket, key string) (State, error) {
	cur, ok, err := s.current(bucket, key)
	return s.stateOf(bucket, key, cur, ok), err
}

// stateOf is state for the key's current version cur (ok: it has one).
func (s *records) stateOf(bucket, key string, cur Version, ok bool) State {
	st := State{Mod: s.mod(bucket, key)}
	if ok && !cur.Marker {
		st.Exists, st.ETag = true, cur.ETag
	}
	return st
}

func (s *records) hasUploads(bucket, key string) bool {
	b := s.read(tblUploads)
	if b == nil {
		return false
	}
	p := keyPrefix(bucket, key)
	k, _ := b.Cursor().Seek(p)
	return k != nil && bytes.HasPrefix(k, p)
}

// --- writes (Update only) ---

// putVersion publishes v as the key's newest version according to the
// bucket's versioning state, and returns it as stored and the blobs of
// versions it replaced (to remove after commit). data is the inline body,
// or nil.
func (s *records) putVersion(bucket, key, versioning string, v Version, data []byte) (Version, []string) {
	cur, ok, _ := s.current(bucket, key)
	return s.putVersionOver(bucket, key, versioning, v, data, cur, ok)
}

// putVersionOver is putVersion when the key's current version cur (ok: it
// has one) was already read.
func (s *records) putVersionOver(bucket, key, versioning string, v Version, data []byte, cur Version, ok bool) (Version, []string) {
	var dropped []string
	idx := s.tx.Index()
	v.Index = idx
	if versioning == VersioningEnabled {
		v.VersionID = VersionID(idx)
	} else {
		v.VersionID = NullVersion
		var old Version
		switch {
		case versioning == VersioningOff && (!ok || cur.VersionID == NullVersion):
			// Never versioned: the current version is the only one.
			old = cur
		default:
			old, ok, _ = s.versionByID(bucket, key, NullVersion)
		}
		if ok {
			dropped = append(dropped, s.removeVersion(bucket, key, old)...)
		}
	}
	if v.SSE != "" {
		s.noteKey()
	}
	vk := versionKey(bucket, key, idx)
	mustPut(s.write(tblVersions), vk, mustJSON(v))
	if v.Inline {
		mustPut(s.write(tblData), vk, data)
	}
	s.touch(bucket, key)
	return v, dropped
}

// removeVersion deletes one version record and returns its blobs.
func (s *records) removeVersion(bucket, key string, v Version) []string {
	vk := versionKey(bucket, key, v.Index)
	mustDelete(s.write(tblVersions), vk)
	if v.Inline {
		mustDelete(s.write(tblData), vk)
	}
	s.touch(bucket, key)
	return v.Blobs()
}

// rewriteVersion stores a changed record of an existing version (its
// attributes, not its body). It wakes watchers of the key but is not a
// mutation for the multipart 409 rule: the object's ETag is unchanged.
func (s *records) rewriteVersion(bucket, key string, v Version) error {
	if err := s.write(tblVersions).Put(versionKey(bucket, key, v.Index), mustJSON(v)); err != nil {
		return err
	}
	s.tx.Touch(keyWatch(bucket, key))
	return nil
}

// keyWatch is the engine watch name of one object key.
func keyWatch(bucket, key string) string { return "\x00s3/" + bucket + "/" + key }

// touch records a mutation of the key: it consumes the Update's index and
// keeps the key's last-mutation index for the multipart 409 rule. The
// record is dropped when nothing (no version, no upload) needs it.
func (s *records) touch(bucket, key string) {
	s.tx.Touch(keyWatch(bucket, key))
	mustPut(s.write(tblMod), modKey(bucket, key), binary.BigEndian.AppendUint64(nil, s.tx.Index()))
}

// tidyMod drops the key's mutation record when no version, no upload and
// no in-flight conditional write needs it, so deleted keys leave nothing
// behind.
func (s *records) tidyMod(bucket, key string) {
	if _, ok, _ := s.current(bucket, key); ok || s.hasUploads(bucket, key) {
		return
	}
	if s.keep != nil && s.keep(bucket+"/"+key) {
		return
	}
	mustDelete(s.write(tblMod), modKey(bucket, key))
}
