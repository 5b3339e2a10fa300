package s3api

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"

	"go.etcd.io/bbolt"

	"github.com/latchkey/latchkey/internal/engine"
)

// maxListKeys is the page size cap of every listing, as S3.
const maxListKeys = 1000

// maxKeysParam parses max-keys (default and cap 1000).
func maxKeysParam(q *request, name string) (int, error) {
	v := q.query.Get(name)
	if v == "" {
		return maxListKeys, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errInvalidArgument("Provided "+name+" not an integer or within integer range", name, v)
	}
	return min(n, maxListKeys), nil
}

func encodingParam(q *request) (string, error) {
	switch et := q.query.Get("encoding-type"); et {
	case "", "url":
		return et, nil
	default:
		return "", errInvalidArgument("Invalid Encoding Method specified in Request", "encoding-type", et)
	}
}

// listed is one page of current objects.
type listed struct {
	page listPage
	recs map[string]version
}

// listCurrent lists the live keys (current version not a delete marker).
func (h *Handler) listCurrent(bucket, prefix, delim, marker string, max int) (listed, error) {
	out := listed{recs: map[string]version{}}
	err := h.e.View(func(tx *engine.Tx) error {
		s := store{tx: tx}
		if _, err := s.mustBucket(bucket); err != nil {
			return err
		}
		b := tx.ReadBucket(tblVersions)
		it := &keyCursor{bp: []byte(bucket + "/")}
		if b != nil {
			it.c = b.Cursor()
		}
		out.page = listKeys(it, prefix, delim, marker, max, func(key string) bool {
			if it.err != nil || it.cur.Marker {
				return false
			}
			out.recs[key] = it.cur
			return true
		})
		return it.err
	})
	return out, err
}

// keyCursor is versionKeys with a working next.
type keyCursor struct {
	c   *bbolt.Cursor
	bp  []byte
	key string
	cur version
	err error
}

func (it *keyCursor) at(k, v []byte) (string, bool) {
	if k == nil || !bytes.HasPrefix(k, it.bp) {
		return "", false
	}
	key, _, ok := splitVersionKey(k, len(it.bp))
	if !ok {
		return "", false
	}
	it.key = key
	it.cur, it.err = decode[version](v)
	return key, it.err == nil
}

func (it *keyCursor) seek(k string) (string, bool) {
	if it.c == nil {
		return "", false
	}
	return it.at(it.c.Seek(append(bytes.Clone(it.bp), k...)))
}

func (it *keyCursor) next() (string, bool) {
	if it.c == nil {
		return "", false
	}
	// Older versions of it.key sort right after it.key "\x00"; the first
	// entry at or after it.key "\x01" is the next key.
	return it.at(it.c.Seek(append(append(bytes.Clone(it.bp), it.key...), 1)))
}

func (h *Handler) listObjectsV2(q *request) error {
	max, err := maxKeysParam(q, "max-keys")
	if err != nil {
		return err
	}
	enc, err := encodingParam(q)
	if err != nil {
		return err
	}
	prefix, delim := q.query.Get("prefix"), q.query.Get("delimiter")
	token, hasToken := q.query["continuation-token"]
	marker := q.query.Get("start-after")
	if hasToken {
		m, ok := decodeToken(token[0])
		if !ok {
			return errInvalidArgument("The continuation token provided is incorrect", "continuation-token", token[0])
		}
		marker = m
	}
	l, err := h.listCurrent(q.bucket, prefix, delim, marker, max)
	if err != nil {
		return err
	}
	fetchOwner := q.query.Get("fetch-owner") == "true"
	res := listBucketV2Result{
		NS: s3NS, Name: q.bucket, Prefix: encodeIf(enc, prefix), Delimiter: encodeIf(enc, delim),
		StartAfter: encodeIf(enc, q.query.Get("start-after")), MaxKeys: max, EncodingType: enc,
		IsTruncated: l.page.Truncated, KeyCount: len(l.page.Keys) + len(l.page.Prefixes),
	}
	if hasToken {
		res.ContinuationToken = token[0]
	}
	if l.page.Truncated {
		res.NextContinuationToken = encodeToken(l.page.Next)
	}
	res.Contents, res.CommonPrefixes = listEntries(l, enc, fetchOwner)
	return writeXML(q.w, http.StatusOK, res)
}

func (h *Handler) listObjectsV1(q *request) error {
	max, err := maxKeysParam(q, "max-keys")
	if err != nil {
		return err
	}
	enc, err := encodingParam(q)
	if err != nil {
		return err
	}
	prefix, delim, marker := q.query.Get("prefix"), q.query.Get("delimiter"), q.query.Get("marker")
	l, err := h.listCurrent(q.bucket, prefix, delim, marker, max)
	if err != nil {
		return err
	}
	res := listBucketV1Result{
		NS: s3NS, Name: q.bucket, Prefix: encodeIf(enc, prefix), Delimiter: encodeIf(enc, delim),
		Marker: encodeIf(enc, marker), MaxKeys: max, EncodingType: enc, IsTruncated: l.page.Truncated,
	}
	if l.page.Truncated && delim != "" {
		res.NextMarker = encodeIf(enc, l.page.Next)
	}
	res.Contents, res.CommonPrefixes = listEntries(l, enc, true)
	return writeXML(q.w, http.StatusOK, res)
}

func listEntries(l listed, enc string, withOwner bool) ([]listObject, []commonPrefix) {
	objs := make([]listObject, 0, len(l.page.Keys))
	for _, k := range l.page.Keys {
		v := l.recs[k]
		o := listObject{Key: encodeIf(enc, k), LastModified: isoTime(v.modTime()), ETag: v.ETag, Size: v.Size, StorageClass: "STANDARD"}
		if withOwner {
			ow := theOwner
			o.Owner = &ow
		}
		objs = append(objs, o)
	}
	var cps []commonPrefix
	for _, p := range l.page.Prefixes {
		cps = append(cps, commonPrefix{Prefix: encodeIf(enc, p)})
	}
	return objs, cps
}

func encodeIf(enc, s string) string {
	if enc == "url" {
		return s3URLEncode(s)
	}
	return s
}

// listObjectVersions lists every version and delete marker, newest first
// within a key, resuming after (key-marker, version-id-marker).
func (h *Handler) listObjectVersions(q *request) error {
	max, err := maxKeysParam(q, "max-keys")
	if err != nil {
		return err
	}
	enc, err := encodingParam(q)
	if err != nil {
		return err
	}
	prefix, delim := q.query.Get("prefix"), q.query.Get("delimiter")
	keyMarker, vidMarker := q.query.Get("key-marker"), q.query.Get("version-id-marker")
	if vidMarker != "" && keyMarker == "" {
		return errInvalidArgument("A version-id marker cannot be specified without a key marker.", "version-id-marker", vidMarker)
	}
	res := listVersionsResult{
		NS: s3NS, Name: q.bucket, Prefix: encodeIf(enc, prefix), Delimiter: encodeIf(enc, delim),
		KeyMarker: encodeIf(enc, keyMarker), VersionIDMarker: vidMarker, MaxKeys: max, EncodingType: enc,
	}
	err = h.e.View(func(tx *engine.Tx) error {
		s := store{tx: tx}
		if _, err := s.mustBucket(q.bucket); err != nil {
			return err
		}
		b := tx.ReadBucket(tblVersions)
		if b == nil || max == 0 {
			return nil
		}
		bp := []byte(q.bucket + "/")
		c := b.Cursor()
		var k, v []byte
		switch {
		case keyMarker == "":
			k, v = c.Seek(append(bytes.Clone(bp), prefix...))
		case vidMarker == "":
			k, v = c.Seek(append(bytes.Clone(bp), startAfter(prefix, delim, keyMarker)...))
		default:
			// Resume after the given version of keyMarker: find it, then
			// step past it.
			k, v = c.Seek(append(bytes.Clone(bp), keyMarker...))
			for k != nil && bytes.HasPrefix(k, keyPrefix(q.bucket, keyMarker)) {
				rec, err := decode[version](v)
				if err != nil {
					return err
				}
				k, v = c.Next()
				if rec.VersionID == vidMarker {
					break
				}
			}
		}
		count, lastKey, latestOf := 0, "", ""
		for k != nil && bytes.HasPrefix(k, bp) {
			key, _, ok := splitVersionKey(k, len(bp))
			if !ok || !strings.HasPrefix(key, prefix) {
				break
			}
			if cp := rollup(key, prefix, delim); cp != "" {
				if count == max {
					res.IsTruncated = true
					break
				}
				res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: encodeIf(enc, cp)})
				count++
				res.NextKeyMarker, res.NextVersionIDMarker = encodeIf(enc, cp), ""
				end := prefixEnd(cp)
				if end == "" {
					break
				}
				k, v = c.Seek(append(bytes.Clone(bp), end...))
				continue
			}
			rec, err := decode[version](v)
			if err != nil {
				return err
			}
			if count == max {
				res.IsTruncated = true
				break
			}
			isLatest := key != latestOf
			latestOf = key
			if keyMarker != "" && vidMarker != "" && key == keyMarker && lastKey == "" {
				isLatest = false // resumed inside this key's versions
			}
			lastKey = key
			res.Entries = append(res.Entries, versionXML(rec, key, enc, isLatest))
			count++
			res.NextKeyMarker, res.NextVersionIDMarker = encodeIf(enc, key), rec.VersionID
			k, v = c.Next()
		}
		if !res.IsTruncated {
			res.NextKeyMarker, res.NextVersionIDMarker = "", ""
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeXML(q.w, http.StatusOK, res)
}

func versionXML(v version, key, enc string, latest bool) versionEntry {
	e := versionEntry{Key: encodeIf(enc, key), VersionID: v.VersionID, IsLatest: latest,
		LastModified: isoTime(v.modTime()), Owner: theOwner}
	if v.Marker {
		e.XMLName.Local = "DeleteMarker"
		return e
	}
	e.XMLName.Local = "Version"
	e.ETag = v.ETag
	size := v.Size
	e.Size = &size
	e.StorageClass = "STANDARD"
	return e
}
