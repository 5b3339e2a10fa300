package s3model

import (
	"bytes"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/keyrange"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// The read helpers of the web console (server/internal/console, through s3api). Each reads at
// most limit records from a cursor and reports whether more follow.

// BucketInfo is one bucket.
type BucketInfo struct {
	Name       string    `json:"name"`
	Created    time.Time `json:"created"`
	Versioning string    `json:"versioning"` // "", "Enabled" or "Suspended"
}

// ConsoleBuckets returns the buckets named after after, in name order.
func ConsoleBuckets(tx *engine.Tx, after string, limit int) (_ []BucketInfo, more bool) {
	b := readTable(tx, tblBuckets)
	if b == nil {
		return nil, false
	}
	var out []BucketInfo
	c := b.Cursor()
	for k, v := c.Seek([]byte(after)); k != nil; k, v = c.Next() {
		if after != "" && string(k) == after {
			continue
		}
		if len(out) >= limit {
			return out, true
		}
		rec, err := decode[Bucket](v)
		if err != nil {
			continue
		}
		out = append(out, BucketInfo{Name: string(k), Created: time.Unix(0, rec.Created).UTC(), Versioning: rec.Versioning})
	}
	return out, false
}

// ConsoleBucket returns one bucket.
func ConsoleBucket(tx *engine.Tx, name string) (BucketInfo, bool) {
	rec, ok, _ := getRecord[Bucket](readTable(tx, tblBuckets), []byte(name))
	if !ok {
		return BucketInfo{}, false
	}
	return BucketInfo{Name: name, Created: time.Unix(0, rec.Created).UTC(), Versioning: rec.Versioning}, true
}

// ObjectVersion is one version of one key: an object or a delete marker.
type ObjectVersion struct {
	Key          string    `json:"key"`
	VersionID    string    `json:"version_id"`
	Latest       bool      `json:"latest"`
	DeleteMarker bool      `json:"delete_marker"`
	ETag         string    `json:"etag,omitempty"`
	Size         int64     `json:"size"`
	Modified     time.Time `json:"modified"`
	ContentType  string    `json:"content_type,omitempty"`
	Parts        int       `json:"parts,omitempty"`
	Index        uint64    `json:"index"` // engine index of the write
}

// ConsoleVersions returns the versions of the keys of bucket that start
// with prefix and come after the key after (all versions of a key, newest
// first, then the next key), at most limit versions.
func ConsoleVersions(tx *engine.Tx, bucket, prefix, after string, limit int) (_ []ObjectVersion, more bool) {
	b := readTable(tx, tblVersions)
	if b == nil {
		return nil, false
	}
	bp := len(bucket) + 1
	p := []byte(bucket + "/" + prefix)
	start := p
	if after != "" && after >= prefix {
		start = append(keyPrefix(bucket, after), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	}
	var out []ObjectVersion
	last := ""
	c := b.Cursor()
	for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		key, index, ok := splitVersionKey(k, bp)
		if !ok {
			continue
		}
		if len(out) >= limit {
			return out, true
		}
		rec, err := decode[Version](v)
		if err != nil {
			continue
		}
		out = append(out, ObjectVersion{
			Key: key, VersionID: rec.VersionID, Latest: key != last, DeleteMarker: rec.Marker,
			ETag: rec.ETag, Size: rec.Size, Modified: rec.ModTime(), ContentType: rec.ContentType, Parts: rec.Parts, Index: index,
		})
		last = key
	}
	return out, false
}

// UploadInfo is one multipart upload in progress.
type UploadInfo struct {
	Key       string    `json:"key"`
	UploadID  string    `json:"upload_id"`
	Initiated time.Time `json:"initiated"`
}

// ConsoleUploads returns the multipart uploads in progress in bucket, at
// most limit of them.
func ConsoleUploads(tx *engine.Tx, bucket string, limit int) (_ []UploadInfo, more bool) {
	b := readTable(tx, tblUploads)
	if b == nil {
		return nil, false
	}
	p := []byte(bucket + "/")
	var out []UploadInfo
	c := b.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if len(out) >= limit {
			return out, true
		}
		i := bytes.IndexByte(k[len(p):], 0)
		if i < 0 {
			continue
		}
		rec, err := decode[Upload](v)
		if err != nil {
			continue
		}
		out = append(out, UploadInfo{
			Key: string(k[len(p) : len(p)+i]), UploadID: string(k[len(p)+i+1:]),
			Initiated: time.Unix(0, rec.Initiated).UTC(),
		})
	}
	return out, false
}

// ConsoleCount counts the records of one S3 table ("buckets" or
// "versions"), stopping at limit.
func ConsoleCount(tx *engine.Tx, table string, limit int) (n int, more bool) {
	name := map[string]string{"buckets": tblBuckets, "versions": tblVersions}[table]
	b := readTable(tx, name)
	if name == "" || b == nil {
		return 0, false
	}
	return keyrange.Count(b.Cursor(), nil, limit)
}

// LiveBlobs names every blob an S3 record references (object versions and
// uploaded parts), for the engine's orphan sweep at Open
// (engine.Options.LiveBlobs).
func LiveBlobs(tx *engine.Tx, live func(id string)) error {
	if b := readTable(tx, tblVersions); b != nil {
		err := b.ForEach(func(_, v []byte) error {
			if !bytes.Contains(v, []byte(`"seg"`)) {
				return nil
			}
			rec, err := decode[Version](v)
			if err != nil {
				return err
			}
			for _, s := range rec.Segments {
				live(s.Blob)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("s3model: live blobs: %w", err)
		}
	}
	if b := readTable(tx, tblParts); b != nil {
		err := b.ForEach(func(_, v []byte) error {
			rec, err := decode[Part](v)
			if err != nil {
				return err
			}
			live(rec.Blob)
			return nil
		})
		if err != nil {
			return fmt.Errorf("s3model: live blobs: %w", err)
		}
	}
	return nil
}
