package s3api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/server/internal/s3model"
)

// putObject streams the body to a blob first, then checks the precondition
// and publishes the version in one engine Update. A loser's blob is
// removed.
func (h *Handler) putObject(q *request) error {
	cond, cerr := parseWriteCond(q.r, q.query)
	if cerr != nil {
		return cerr
	}
	ct, hdrs, meta, tags, err := newObjectAttrs(q.r)
	if err != nil {
		return err
	}
	wantMD5, size, err := bodyHeaders(q.r)
	if err != nil {
		return err
	}
	sse, err := h.objectSSE(q.bucket, q.sse)
	if err != nil {
		return err
	}
	body, sum, err := checkedBody(q)
	if err != nil {
		return err
	}
	defer h.beginConditional(q, cond)()
	snap, err := h.precheck(q, cond)
	if err != nil {
		return err
	}
	in, err := h.ingestCheckedSealed(body, size, true, wantMD5, sum, h.sealingFor(sse, q.bucket, q.key))
	if err != nil {
		return err
	}
	v := version{
		ETag: etagOfMD5(in.md5), Size: in.size, ContentType: ct, Headers: hdrs, Meta: meta,
		Inline: in.blob == "", Segments: in.segments(), Tags: tags, Checksum: verifiedChecksum(q, sum, nil),
		SSE: sse,
	}
	if v.Checksum != nil {
		v.Checksum.Type = checksumFullObject
	}
	res, err := h.publish(q, cond, &snap, v, in.inline)
	if err != nil {
		h.discard(in)
		return err
	}
	setWrittenVersionHeader(q.w, res.Version.VersionID)
	setChecksumHeaders(q.w, res.Version.Checksum)
	setSSEHeader(q.w, res.Version.SSE)
	q.w.Header().Set("Etag", res.Version.ETag)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// precheck runs before the body is read: the bucket must exist, and a
// precondition already false need not upload anything. It returns the key's
// last-mutation index: a conditional write whose precondition still holds at
// commit but whose key was changed meanwhile answers 409
// ConditionalRequestConflict, as S3 does for writes that raced a
// conflicting operation (docs/wire-s3.md, "Concurrent writes"). The
// decisive check is the one at commit.
func (h *Handler) precheck(q *request, cond writeCond) (uint64, error) {
	snap, err := h.m.Precheck(q.bucket, q.key, cond.decide(q.key, nil))
	if hook := h.afterPrecheck.Load(); err == nil && hook != nil {
		(*hook)()
	}
	return snap, err
}

// publish checks cond against the key at commit and, if it holds, makes v
// the key's current version, in one engine Update. snapshot is the key's
// last-mutation index when the request began (the 409 rule).
func (h *Handler) publish(q *request, cond writeCond, snapshot *uint64, v version, data []byte) (s3model.Put, error) {
	return h.m.PutVersion(q.ctx, q.bucket, q.key, cond.decide(q.key, snapshot), v, data)
}

// setVersionHeader answers the version a read or tagging request acted on:
// none in a bucket that never had versioning, "null" for the null version
// of a suspended bucket.
func setVersionHeader(w http.ResponseWriter, versioning, id string) {
	if versioning != versioningOff || id != nullVersion {
		w.Header().Set("X-Amz-Version-Id", id)
	}
}

// setWrittenVersionHeader answers the version a PUT, CopyObject or
// CompleteMultipartUpload created. A write that made the null version (a
// bucket without versioning, or a suspended one) answers none, as AWS
// does; GET and HEAD of that version still answer "null".
func setWrittenVersionHeader(w http.ResponseWriter, id string) {
	if id != nullVersion {
		w.Header().Set("X-Amz-Version-Id", id)
	}
}

// validVersionParam checks a versionId query parameter.
func validVersionParam(q *request) (string, bool, error) {
	vs, ok := q.query["versionId"]
	if !ok {
		return "", false, nil
	}
	id := vs[0]
	if id == nullVersion {
		return id, true, nil
	}
	if _, ok := parseVersionID(id); !ok {
		return "", false, errInvalidArgument("Invalid version id specified", "versionId", id)
	}
	return id, true, nil
}

// lookup finds the version a GET/HEAD/copy addresses, with the errors AWS
// gives for a missing key, a missing version and a delete marker.
func (h *Handler) lookup(bucket, key, versionID string, byID bool, method string) (version, []byte, string, error) {
	f, err := h.m.Lookup(bucket, key, versionID, byID)
	return f.Version, f.Data, f.Versioning, modelError(err, method)
}

// getObject serves GET (withBody) and HEAD.
func (h *Handler) getObject(q *request, withBody bool) error {
	vid, byID, err := validVersionParam(q)
	if err != nil {
		return err
	}
	rc := parseReadCond(q.r, "")
	for attempt := 0; ; attempt++ {
		v, data, versioning, err := h.lookup(q.bucket, q.key, vid, byID, q.r.Method)
		if err != nil {
			return err
		}
		if e := rc.checkRead(v.ETag, v.ModTime(), time.Now()); e != nil {
			return e
		}
		rng, partial, rerr := h.readRange(q, v)
		if rerr != nil {
			return rerr
		}
		if !partial {
			rng = byteRange{0, v.Size - 1}
		}
		var body *objectReader
		if withBody && rng.length() > 0 {
			body, err = h.openRange(q.bucket, q.key, v, data, rng)
			if errors.Is(err, errBlobGone) && attempt < 3 {
				continue // replaced between lookup and open: read again
			}
			if err != nil {
				return err
			}
			defer body.Close()
		}
		h.writeObjectHeaders(q, v, versioning)
		if !partial && strings.EqualFold(q.r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") {
			// The whole object's checksum describes only a whole body.
			setChecksumHeaders(q.w, v.Checksum)
		}
		hd := q.w.Header()
		hd.Set("Content-Length", strconv.FormatInt(max(rng.length(), 0), 10))
		status := http.StatusOK
		if partial {
			// An empty part has no byte range to name.
			if rng.length() > 0 {
				hd.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", rng.Start, rng.End, v.Size))
			}
			status = http.StatusPartialContent
		}
		q.w.WriteHeader(status)
		switch {
		case body == nil:
		case body.inline != nil:
			_, _ = q.w.Write(body.inline)
		default:
			bp := copyBufs.Get().(*[]byte)
			_, _ = io.CopyBuffer(q.w, body, *bp)
			copyBufs.Put(bp)
		}
		return nil
	}
}

// writeObjectHeaders sets the metadata headers of GET/HEAD, honouring the
// response-* query overrides.
func (h *Handler) writeObjectHeaders(q *request, v version, versioning string) {
	hd := q.w.Header()
	ct := v.ContentType
	if ct == "" {
		ct = "binary/octet-stream"
	}
	// One allocation for the fixed headers' values (the names are
	// canonical).
	vals := []string{v.ETag, v.ModTime().Format(http.TimeFormat), "bytes", ct}
	hd["Etag"] = vals[0:1:1]
	hd["Last-Modified"] = vals[1:2:2]
	hd["Accept-Ranges"] = vals[2:3:3]
	hd["Content-Type"] = vals[3:4:4]
	for k, val := range v.Headers {
		hd.Set(k, val)
	}
	for k, val := range v.Meta {
		// Lower-case on the wire, as AWS sends them: clients such as
		// botocore take the metadata name verbatim from the header name.
		hd["x-amz-meta-"+k] = []string{val}
	}
	setVersionHeader(q.w, versioning, v.VersionID)
	setTagCount(q.w, v.Tags)
	setSSEHeader(q.w, v.SSE)
	// A stored object is the client's content, served on the console's
	// origin: a browser renders it in a sandbox (an opaque origin, no
	// script, no forms, no cookies of ours) and never sniffs another type
	// into it. No stored header or response-* override replaces these.
	// See docs/security.md.
	hd["Content-Security-Policy"] = objectCSP
	hd["X-Content-Type-Options"] = nosniff
	if len(q.query) == 0 {
		return
	}
	for _, o := range responseOverrides {
		if val := q.query.Get(o.param); val != "" {
			hd.Set(o.header, val)
		}
	}
}

var (
	objectCSP = []string{"sandbox"}
	nosniff   = []string{"nosniff"}
)

// responseOverrides are the GET/HEAD query parameters that replace a
// response header.
var responseOverrides = [...]struct{ param, header string }{
	{"response-content-type", "Content-Type"}, {"response-content-language", "Content-Language"},
	{"response-expires", "Expires"}, {"response-cache-control", "Cache-Control"},
	{"response-content-disposition", "Content-Disposition"}, {"response-content-encoding", "Content-Encoding"},
}

// deleteObject deletes the current version (writing a delete marker on a
// versioned bucket) or, with versionId, one version permanently.
func (h *Handler) deleteObject(q *request) error {
	vid, byID, err := validVersionParam(q)
	if err != nil {
		return err
	}
	cond, cerr := parseDeleteCond(q.r, q.query, vid)
	if cerr != nil {
		return cerr
	}
	res, err := h.m.Delete(q.ctx, q.bucket, s3model.Deletion{Key: q.key, VersionID: vid, ByID: byID, Check: cond.decide(q.key)})
	if err != nil {
		return err
	}
	if res.Marker {
		q.w.Header().Set("X-Amz-Delete-Marker", "true")
	}
	if res.VersionID != "" {
		q.w.Header().Set("X-Amz-Version-Id", res.VersionID)
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

// readRange is the byte range a GET/HEAD asks for: a Range header, or a
// partNumber (one part of a multipart object; part 1 is the whole of any
// other object).
func (h *Handler) readRange(q *request, v version) (byteRange, bool, error) {
	pn, hasPN := q.query["partNumber"]
	if !hasPN {
		r, ok, e := parseRange(q.r.Header.Get("Range"), v.Size)
		if e != nil {
			return r, ok, e
		}
		return r, ok, nil
	}
	if q.r.Header.Get("Range") != "" {
		return byteRange{}, false, errInvalidRequest("Cannot specify both Range header and partNumber query parameter")
	}
	n, err := strconv.Atoi(pn[0])
	if err != nil || n < 1 || n > MaxParts {
		return byteRange{}, false, errInvalidArgument("Part number must be an integer between 1 and 10000, inclusive", "partNumber", pn[0])
	}
	count := max(v.Parts, 1)
	if n > count {
		return byteRange{}, false, newErr(http.StatusRequestedRangeNotSatisfiable, "InvalidPartNumber", "The requested partnumber is not satisfiable")
	}
	q.w.Header().Set("X-Amz-Mp-Parts-Count", strconv.Itoa(count))
	if v.Parts == 0 {
		return byteRange{0, v.Size - 1}, v.Size > 0, nil
	}
	var off int64
	for i := 0; i < n-1; i++ {
		off += v.Segments[i].Size
	}
	// An empty part is an empty partial answer (End = Start-1), never the
	// whole object.
	return byteRange{off, off + v.Segments[n-1].Size - 1}, true, nil
}
