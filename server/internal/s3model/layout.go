package s3model

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/server/internal/engine"
)

// The tables (raw engine buckets; the engine namespaces them). doc.go
// describes their keys and values.
const (
	tblBuckets  = "s3b"
	tblVersions = "s3v"
	tblData     = "s3d"
	tblMod      = "s3m"
	tblUploads  = "s3u"
	tblParts    = "s3p"
	tblSSE      = "s3k"
)

// numTables is the number of tables; tableIndex numbers them.
const numTables = 7

func tableIndex(name string) int {
	switch name {
	case tblBuckets:
		return 0
	case tblVersions:
		return 1
	case tblData:
		return 2
	case tblMod:
		return 3
	case tblUploads:
		return 4
	case tblSSE:
		return 6
	}
	return 5 // tblParts
}

// table and cursor are the engine's raw bucket and cursor types. They are
// named here, and tables are opened only by readTable and writeTable, so
// that a change of the engine's bucket type touches this file alone.
type (
	table  = *engine.Bucket
	cursor = *engine.Cursor
)

// readTable returns the table, or nil when it was never written.
func readTable(tx *engine.Tx, name string) table { return tx.ReadBucket(name) }

// writeTable returns the table, creating it (Update only).
func writeTable(tx *engine.Tx, name string) table { return tx.Bucket(name) }

// keyPrefix is the common prefix of every s3v, s3d and s3u key of one
// object key.
func keyPrefix(bucket, key string) []byte {
	b := make([]byte, 0, len(bucket)+len(key)+2+8)
	b = append(b, bucket...)
	b = append(b, '/')
	b = append(b, key...)
	return append(b, 0)
}

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

// bucketPrefix is the prefix of every record of one bucket ("bucket/").
func bucketPrefix(bucket string) []byte { return []byte(bucket + "/") }

// seekKey is bucket prefix bp followed by s, in a fresh slice.
func seekKey(bp []byte, s string) []byte {
	out := make([]byte, 0, len(bp)+len(s)+1)
	return append(append(out, bp...), s...)
}

// splitVersionKey returns the object key and index of an s3v key under
// bucket prefix bp (bucket + "/").
func splitVersionKey(k []byte, bp int) (string, uint64, bool) {
	if len(k) < bp+9 || k[len(k)-9] != 0 {
		return "", 0, false
	}
	return string(k[bp : len(k)-9]), ^binary.BigEndian.Uint64(k[len(k)-8:]), true
}

// VersionID encodes an engine index so that IDs sort newest first.
func VersionID(index uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ^index)
	return hex.EncodeToString(b[:])
}

// ParseVersionID returns the index a version ID names; NullVersion is
// handled by the caller.
func ParseVersionID(id string) (uint64, bool) {
	if len(id) != 16 {
		return 0, false
	}
	var b [8]byte
	if _, err := hex.Decode(b[:], []byte(id)); err != nil {
		return 0, false
	}
	return ^binary.BigEndian.Uint64(b[:]), true
}

func decode[T any](b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// getRecord reads and decodes the record at key of t (nil: a table never
// written); ok is false when there is none or it does not decode.
func getRecord[T any](t table, key []byte) (rec T, ok bool, err error) {
	if t == nil {
		return rec, false, nil
	}
	v := t.Get(key)
	if v == nil {
		return rec, false, nil
	}
	rec, err = decode[T](v)
	return rec, err == nil, err
}

// parseBucket decodes a Bucket record in the exact forms mustJSON writes
// ({"c":N} and {"c":N,"v":"Enabled"|"Suspended"}) without the cost of
// encoding/json, which every request pays once; ok is false for any other
// form, which the caller decodes with encoding/json.
func parseBucket(b []byte) (Bucket, bool) {
	s, ok := strings.CutPrefix(string(b), `{"c":`)
	if !ok {
		return Bucket{}, false
	}
	num, rest, _ := strings.Cut(s, ",")
	num, closed := strings.CutSuffix(num, "}")
	if closed != (rest == "") {
		return Bucket{}, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != num {
		return Bucket{}, false
	}
	rec := Bucket{Created: n}
	switch rest {
	case "":
	case `"v":"` + VersioningEnabled + `"}`:
		rec.Versioning = VersioningEnabled
	case `"v":"` + VersioningSuspended + `"}`:
		rec.Versioning = VersioningSuspended
	default:
		return Bucket{}, false
	}
	return rec, true
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("s3model: encode record: %v", err))
	}
	return b
}

// mustPut and mustDelete write inside an Update, whose engine turns a
// panic into the transaction's failure.
func mustPut(t table, k, v []byte) {
	if err := t.Put(k, v); err != nil {
		panic(err)
	}
}

func mustDelete(t table, k []byte) {
	if err := t.Delete(k); err != nil {
		panic(err)
	}
}
