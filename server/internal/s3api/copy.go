package s3api

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// copySource is a parsed x-amz-copy-source header.
type copySource struct {
	bucket, key, versionID string
	byID                   bool
}

func parseCopySource(q *request) (copySource, error) {
	raw := q.r.Header.Get("X-Amz-Copy-Source")
	path, query, _ := strings.Cut(raw, "?")
	p, err := url.PathUnescape(strings.TrimPrefix(path, "/"))
	if err != nil {
		return copySource{}, errInvalidArgument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey", "x-amz-copy-source", raw)
	}
	b, k, ok := strings.Cut(p, "/")
	if !ok || b == "" || k == "" {
		return copySource{}, errInvalidArgument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey", "x-amz-copy-source", raw)
	}
	if !validBucketName(b) {
		return copySource{}, errInvalidBucketName(b)
	}
	if !utf8.ValidString(k) {
		return copySource{}, errInvalidURI()
	}
	cs := copySource{bucket: b, key: k}
	if query != "" {
		qv, err := url.ParseQuery(query)
		if err != nil {
			return copySource{}, errInvalidArgument("Invalid copy source", "x-amz-copy-source", raw)
		}
		if vs, ok := qv["versionId"]; ok {
			cs.versionID, cs.byID = vs[0], true
			if _, ok := parseVersionID(cs.versionID); !ok && cs.versionID != nullVersion {
				return copySource{}, errInvalidArgument("Invalid version id specified", "x-amz-copy-source", raw)
			}
		}
	}
	return cs, nil
}

// openSource finds the copy source, applies the x-amz-copy-source-if-*
// conditions and opens the byte range (whole object when rng is nil).
func (h *Handler) openSource(q *request, cs copySource, rng func(size int64) (byteRange, error)) (version, *objectReader, byteRange, error) {
	rc := parseReadCond(q.r, "x-amz-copy-source-")
	for attempt := 0; ; attempt++ {
		v, data, _, err := h.lookup(cs.bucket, cs.key, cs.versionID, cs.byID, q.r.Method)
		var e *Error
		if errors.As(err, &e) && e.Code == "MethodNotAllowed" {
			return version{}, nil, byteRange{}, errInvalidRequest("The source of a copy request may not specifically refer to a delete marker by version id.")
		}
		if err != nil {
			return version{}, nil, byteRange{}, err
		}
		if e := rc.checkCopySource(v.ETag, v.ModTime(), time.Now()); e != nil {
			return version{}, nil, byteRange{}, e
		}
		r := byteRange{0, v.Size - 1}
		if rng != nil {
			if r, err = rng(v.Size); err != nil {
				return version{}, nil, byteRange{}, err
			}
		}
		if r.length() > MaxObjectSize {
			return version{}, nil, byteRange{}, errInvalidRequest("The specified copy source is larger than the maximum allowable size for a copy source: 5368709120")
		}
		if r.length() <= 0 {
			return v, &objectReader{r: strings.NewReader("")}, r, nil
		}
		body, err := h.openRange(cs.bucket, cs.key, v, data, r)
		if errors.Is(err, errBlobGone) && attempt < 3 {
			continue
		}
		return v, body, r, err
	}
}

func (h *Handler) copyObject(q *request) error {
	cond, cerr := parseWriteCond(q.r, q.query)
	if cerr != nil {
		return cerr
	}
	cs, err := parseCopySource(q)
	if err != nil {
		return err
	}
	directive := q.r.Header.Get("X-Amz-Metadata-Directive")
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return errInvalidArgument("Unknown metadata directive.", "x-amz-metadata-directive", directive)
	}
	ct, hdrs, meta, err := objectAttrs(q.r)
	if err != nil {
		return err
	}
	tagDirective := q.r.Header.Get("X-Amz-Tagging-Directive")
	if tagDirective != "" && tagDirective != "COPY" && tagDirective != "REPLACE" {
		return errInvalidArgument("Unknown tagging directive.", "x-amz-tagging-directive", tagDirective)
	}
	tags, err := headerTags(q.r)
	if err != nil {
		return err
	}
	sse, err := h.objectSSE(q.bucket, q.sse)
	if err != nil {
		return err
	}
	src, body, _, err := h.openSource(q, cs, nil)
	if err != nil {
		return err
	}
	defer body.Close()
	// Fast fail on the destination, then the in-place rule.
	defer h.beginConditional(q, cond)()
	snap, err := h.precheck(q, cond)
	if err != nil {
		return err
	}
	// An encrypting copy (asked for, or the bucket's default) may be in
	// place, as on S3.
	if cs.bucket == q.bucket && cs.key == q.key && !cs.byID && directive != "REPLACE" && sse == "" {
		return errInvalidRequest("This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	}
	// The destination's encryption is the request's or the bucket's
	// default, never inherited from the source (as on S3).
	in, err := h.ingestSealed(body, src.Size, true, h.sealingFor(sse, q.bucket, q.key))
	if err != nil {
		return err
	}
	v := version{ETag: etagOfMD5(in.md5), Size: in.size, Inline: in.blob == "", Segments: in.segments(),
		ContentType: src.ContentType, Meta: src.Meta, Headers: src.Headers, Tags: src.Tags, SSE: sse}
	if directive == "REPLACE" {
		v.ContentType, v.Meta, v.Headers = ct, meta, hdrs
	}
	if tagDirective == "REPLACE" {
		v.Tags = tags
	}
	if src.Checksum != nil && src.Checksum.Type == checksumFullObject {
		v.Checksum = src.Checksum // the same bytes
	}
	res, err := h.publish(q, cond, &snap, v, in.inline)
	if err != nil {
		h.discard(in)
		return err
	}
	setWrittenVersionHeader(q.w, res.Version.VersionID)
	if src.VersionID != nullVersion {
		q.w.Header().Set("X-Amz-Copy-Source-Version-Id", src.VersionID)
	}
	setSSEHeader(q.w, res.Version.SSE)
	return writeXML(q.w, http.StatusOK, copyResult{XMLName: xml.Name{Local: "CopyObjectResult"}, NS: s3NS, ETag: res.Version.ETag, LastModified: isoTime(res.Version.ModTime()),
		checksumFields: checksumXML(res.Version.Checksum)})
}

// uploadPartCopy fills a part from (a range of) an existing object.
func (h *Handler) uploadPartCopy(q *request) error {
	n, err := partNumberParam(q)
	if err != nil {
		return err
	}
	id := q.query.Get("uploadId")
	cs, err := parseCopySource(q)
	if err != nil {
		return err
	}
	up, err := h.m.Upload(q.bucket, q.key, id)
	if err != nil {
		return err
	}
	var rngFn func(int64) (byteRange, error)
	if hv := q.r.Header.Get("X-Amz-Copy-Source-Range"); hv != "" {
		rngFn = func(size int64) (byteRange, error) {
			bad := errInvalidArgument("The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy", "x-amz-copy-source-range", hv)
			spec, ok := strings.CutPrefix(hv, "bytes=")
			a, b, ok2 := strings.Cut(spec, "-")
			first, err1 := strconv.ParseInt(a, 10, 64)
			last, err2 := strconv.ParseInt(b, 10, 64)
			if !ok || !ok2 || err1 != nil || err2 != nil || first < 0 || last < first {
				return byteRange{}, bad
			}
			if last >= size {
				return byteRange{}, errInvalidArgument(fmt.Sprintf("Range specified is not valid for source object of size: %d", size), "x-amz-copy-source-range", hv)
			}
			return byteRange{first, last}, nil
		}
	}
	_, body, r, err := h.openSource(q, cs, rngFn)
	if err != nil {
		return err
	}
	defer body.Close()
	src, computed := hashing(body, up.ChecksumAlg)
	in, err := h.ingestSealed(src, max(r.length(), 0), false, h.sealingFor(up.SSE, q.bucket, q.key))
	if err != nil {
		return err
	}
	etag := etagOfMD5(in.md5)
	ck := computedChecksum(computed)
	if err := h.putPart(q, id, n, partRec{ETag: etag, Size: in.size, Blob: in.blob, Checksum: ck}); err != nil {
		h.discard(in)
		return err
	}
	setSSEHeader(q.w, up.SSE)
	return writeXML(q.w, http.StatusOK, copyResult{XMLName: xml.Name{Local: "CopyPartResult"}, NS: s3NS, ETag: etag, LastModified: isoTime(time.Now()),
		checksumFields: checksumXML(ck)})
}
