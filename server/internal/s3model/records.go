package s3model

import (
	"strings"
	"time"
)

// NullVersion is the version ID of objects written while versioning is
// not enabled.
const NullVersion = "null"

// Versioning states of a bucket.
const (
	// VersioningOff is a bucket whose versioning was never enabled.
	VersioningOff = ""
	// VersioningEnabled keeps every version.
	VersioningEnabled = "Enabled"
	// VersioningSuspended writes "null" versions, keeping older ones.
	VersioningSuspended = "Suspended"
)

// Bucket is a bucket's record (s3b).
type Bucket struct {
	Created    int64  `json:"c"` // unix nanoseconds
	Versioning string `json:"v,omitempty"`
	// SSE is the bucket's default encryption (SSEAES256), "" for none.
	SSE string `json:"sse,omitempty"`
}

// Segment is one blob of an object's body; a multipart object has one per
// part, in order.
type Segment struct {
	Blob string `json:"b"`
	Size int64  `json:"s"`
}

// Checksum is a kept x-amz-checksum-* value.
type Checksum struct {
	Alg   string `json:"a"`           // "crc32", "crc32c", "crc64nvme", "sha1", "sha256"
	Value string `json:"v"`           // base64; a composite one ends in "-N"
	Type  string `json:"t,omitempty"` // FULL_OBJECT or COMPOSITE; "" on parts
}

// Version is one version of one key (s3v): an object or a delete marker.
type Version struct {
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
	Segments    []Segment         `json:"seg,omitempty"`
	Parts       int               `json:"pc,omitempty"` // multipart part count
	Tags        map[string]string `json:"tg,omitempty"` // object tags
	Upload      string            `json:"up,omitempty"` // the multipart upload it completed
	Checksum    *Checksum         `json:"ck,omitempty"`
	PartSums    []string          `json:"pck,omitempty"` // multipart: each part's checksum (Checksum.Alg)
	// SSE is the object's server-side encryption (SSEAES256: its inline
	// body and every segment are sealed, server/internal/s3api/ssecrypt), "" for
	// none.
	SSE string `json:"sse,omitempty"`
}

// ModTime is the version's Last-Modified.
func (v *Version) ModTime() time.Time { return time.Unix(0, v.Modified).UTC() }

// Blobs names the blobs of the version's body.
func (v *Version) Blobs() []string {
	out := make([]string, 0, len(v.Segments))
	for _, s := range v.Segments {
		out = append(out, s.Blob)
	}
	return out
}

// Upload is a multipart upload in progress (s3u).
type Upload struct {
	Initiated   int64             `json:"t"`
	ContentType string            `json:"ct,omitempty"`
	Meta        map[string]string `json:"m,omitempty"`
	Headers     map[string]string `json:"h,omitempty"`
	Snapshot    uint64            `json:"snap"` // s3m of the key at create
	Tags        map[string]string `json:"tg,omitempty"`
	ChecksumAlg string            `json:"ca,omitempty"` // x-amz-checksum-algorithm, lower case
	ChecksumTyp string            `json:"cty,omitempty"`
	SSE         string            `json:"sse,omitempty"` // every part sealed; the object's SSE
}

// Part is one uploaded part of a multipart upload (s3p).
type Part struct {
	ETag     string    `json:"e"`
	Size     int64     `json:"s"`
	Modified int64     `json:"t"`
	Blob     string    `json:"b"`
	Checksum *Checksum `json:"ck,omitempty"`
}

// State is a key as write preconditions see it. A key whose current
// version is a delete marker does not exist.
type State struct {
	Exists bool
	ETag   string // quoted
	// Mod is the engine index of the last mutation of the key (put, delete,
	// marker), 0 if none is known. Used for the multipart 409 rule.
	Mod uint64
}

// Check decides a write's precondition against the key's state inside the
// transaction that would publish it; a non-nil error refuses the write
// and is returned unchanged.
type Check func(State) error

// ValidKey reports whether the layout can hold key (keys may not contain
// NUL, which separates a key from its version index).
func ValidKey(key string) bool { return !strings.ContainsRune(key, 0) }
