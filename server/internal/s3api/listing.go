package s3api

import (
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
	"github.com/latchkey/latchkey/server/internal/s3model"
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

// listParams are the parameters every listing takes.
type listParams struct {
	max           int    // max-keys or max-uploads (maxKeysParam)
	enc           string // encoding-type: "" or "url"
	prefix, delim string
}

// listingParams parses them; maxName is the page size's parameter.
func listingParams(q *request, maxName string) (listParams, error) {
	max, err := maxKeysParam(q, maxName)
	if err != nil {
		return listParams{}, err
	}
	enc, err := encodingParam(q)
	if err != nil {
		return listParams{}, err
	}
	return listParams{max: max, enc: enc, prefix: q.query.Get("prefix"), delim: q.query.Get("delimiter")}, nil
}

func encodingParam(q *request) (string, error) {
	switch et := q.query.Get("encoding-type"); et {
	case "", "url":
		return et, nil
	default:
		return "", errInvalidArgument("Invalid Encoding Method specified in Request", "encoding-type", et)
	}
}

func (h *Handler) listObjectsV2(q *request) error {
	p, err := listingParams(q, "max-keys")
	if err != nil {
		return err
	}
	max, enc, prefix, delim := p.max, p.enc, p.prefix, p.delim
	token, hasToken := q.query["continuation-token"]
	marker := q.query.Get("start-after")
	if hasToken {
		m, ok := decodeToken(token[0])
		if !ok {
			return errInvalidArgument("The continuation token provided is incorrect", "continuation-token", token[0])
		}
		marker = m
	}
	l, err := h.m.ListCurrent(q.bucket, prefix, delim, marker, max)
	if err != nil {
		return err
	}
	fetchOwner := q.query.Get("fetch-owner") == "true"
	res := listBucketV2Result{
		NS: s3NS, Name: q.bucket, Prefix: encodeIf(enc, prefix), Delimiter: encodeIf(enc, delim),
		StartAfter: encodeIf(enc, q.query.Get("start-after")), MaxKeys: max, EncodingType: enc,
		IsTruncated: l.Truncated, KeyCount: len(l.Keys) + len(l.Prefixes),
	}
	if hasToken {
		res.ContinuationToken = token[0]
	}
	if l.Truncated {
		res.NextContinuationToken = encodeToken(l.Next)
	}
	res.Contents, res.CommonPrefixes = listEntries(l, enc, fetchOwner)
	return writeXML(q.w, http.StatusOK, res)
}

func (h *Handler) listObjectsV1(q *request) error {
	p, err := listingParams(q, "max-keys")
	if err != nil {
		return err
	}
	max, enc, prefix, delim, marker := p.max, p.enc, p.prefix, p.delim, q.query.Get("marker")
	l, err := h.m.ListCurrent(q.bucket, prefix, delim, marker, max)
	if err != nil {
		return err
	}
	res := listBucketV1Result{
		NS: s3NS, Name: q.bucket, Prefix: encodeIf(enc, prefix), Delimiter: encodeIf(enc, delim),
		Marker: encodeIf(enc, marker), MaxKeys: max, EncodingType: enc, IsTruncated: l.Truncated,
	}
	if l.Truncated && delim != "" {
		res.NextMarker = encodeIf(enc, l.Next)
	}
	res.Contents, res.CommonPrefixes = listEntries(l, enc, true)
	return writeXML(q.w, http.StatusOK, res)
}

func listEntries(l s3model.Page, enc string, withOwner bool) ([]listObject, []commonPrefix) {
	objs := make([]listObject, 0, len(l.Keys))
	for _, k := range l.Keys {
		v := l.Current[k]
		o := listObject{Key: encodeIf(enc, k), LastModified: isoTime(v.ModTime()), ETag: v.ETag, Size: v.Size, StorageClass: "STANDARD"}
		if withOwner {
			ow := theOwner
			o.Owner = &ow
		}
		objs = append(objs, o)
	}
	return objs, commonPrefixes(l.Prefixes, enc)
}

// commonPrefixes renders a listing's rolled-up prefixes (nil for none).
func commonPrefixes(prefixes []string, enc string) []commonPrefix {
	var cps []commonPrefix
	for _, p := range prefixes {
		cps = append(cps, commonPrefix{Prefix: encodeIf(enc, p)})
	}
	return cps
}

// encodeIf encodes s for encoding-type=url (enc "url") the way S3 does:
// like a URL path with "/" kept, a space as %20 and "+" as %2B (as
// ceph/s3-tests' encoding tests, which run against AWS, expect).
func encodeIf(enc, s string) string {
	if enc == "url" {
		return sigv4.URIEncode(s, true)
	}
	return s
}

// listObjectVersions lists every version and delete marker, newest first
// within a key, resuming after (key-marker, version-id-marker).
func (h *Handler) listObjectVersions(q *request) error {
	p, err := listingParams(q, "max-keys")
	if err != nil {
		return err
	}
	max, enc, prefix, delim := p.max, p.enc, p.prefix, p.delim
	keyMarker, vidMarker := q.query.Get("key-marker"), q.query.Get("version-id-marker")
	if vidMarker != "" && keyMarker == "" {
		return errInvalidArgument("A version-id marker cannot be specified without a key marker.", "version-id-marker", vidMarker)
	}
	res := listVersionsResult{
		NS: s3NS, Name: q.bucket, Prefix: encodeIf(enc, prefix), Delimiter: encodeIf(enc, delim),
		KeyMarker: encodeIf(enc, keyMarker), VersionIDMarker: vidMarker, MaxKeys: max, EncodingType: enc,
	}
	page, err := h.m.ListVersions(q.bucket, s3model.VersionsQuery{Prefix: prefix, Delimiter: delim,
		KeyMarker: keyMarker, VersionIDMarker: vidMarker, Max: max})
	if err != nil {
		return err
	}
	res.IsTruncated = page.Truncated
	res.NextKeyMarker, res.NextVersionIDMarker = encodeIf(enc, page.NextKey), page.NextVersionID
	for _, e := range page.Entries {
		res.Entries = append(res.Entries, versionXML(e.Version, e.Key, enc, e.Latest))
	}
	res.CommonPrefixes = commonPrefixes(page.Prefixes, enc)
	return writeXML(q.w, http.StatusOK, res)
}

func versionXML(v version, key, enc string, latest bool) versionEntry {
	e := versionEntry{Key: encodeIf(enc, key), VersionID: v.VersionID, IsLatest: latest,
		LastModified: isoTime(v.ModTime()), Owner: theOwner}
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

// Continuation tokens are the opaque base64 of the page's last entry.
func encodeToken(marker string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(marker))
}

func decodeToken(tok string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	return string(b), err == nil
}
