package s3api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/server/internal/s3model"
)

// Multipart uploads: the upload record snapshots the key's last-mutation
// index at create (the 409 rule: docs/wire-s3.md, "Concurrent writes"); parts are blobs; Complete
// publishes a version whose segments are the chosen parts' blobs, so no
// byte is copied.

func (h *Handler) createMultipartUpload(q *request) error {
	ct, hdrs, meta, tags, err := newObjectAttrs(q.r)
	if err != nil {
		return err
	}
	alg, typ, err := uploadChecksum(q.r)
	if err != nil {
		return err
	}
	sse, err := h.objectSSE(q.bucket, q.sse)
	if err != nil {
		return err
	}
	id, err := h.m.CreateUpload(q.ctx, q.bucket, q.key, uploadRec{ContentType: ct, Meta: meta, Headers: hdrs,
		Tags: tags, ChecksumAlg: alg, ChecksumTyp: typ, SSE: sse})
	if err != nil {
		return err
	}
	setSSEHeader(q.w, sse)
	if alg != "" {
		q.w.Header().Set("X-Amz-Checksum-Algorithm", strings.ToUpper(alg))
		q.w.Header().Set("X-Amz-Checksum-Type", typ)
	}
	return writeXML(q.w, http.StatusOK, initiateMultipartUploadResult{NS: s3NS, Bucket: q.bucket, Key: q.key, UploadID: id})
}

func partNumberParam(q *request) (int, error) {
	v := q.query.Get("partNumber")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxParts {
		return 0, errInvalidArgument("Part number must be an integer between 1 and 10000, inclusive", "partNumber", v)
	}
	return n, nil
}

func (h *Handler) uploadPart(q *request) error {
	n, err := partNumberParam(q)
	if err != nil {
		return err
	}
	id := q.query.Get("uploadId")
	wantMD5, size, err := bodyHeaders(q.r)
	if err != nil {
		return err
	}
	up, err := h.m.Upload(q.bucket, q.key, id)
	if err != nil {
		return err
	}
	body, sum, err := checkedBody(q)
	if err != nil {
		return err
	}
	// The upload's algorithm is computed here too, for parts whose client
	// sent no checksum, so that Complete can derive the object's.
	body, computed := hashing(body, up.ChecksumAlg)
	in, err := h.ingestCheckedSealed(body, size, false, wantMD5, sum, h.sealingFor(up.SSE, q.bucket, q.key))
	if err != nil {
		return err
	}
	ck := verifiedChecksum(q, sum, computed)
	if ck != nil && up.ChecksumAlg != "" && ck.Alg != up.ChecksumAlg {
		h.discard(in)
		return errInvalidRequest("Checksum Type mismatch occurred, expected checksum Type: " + up.ChecksumAlg + ", actual checksum Type: " + ck.Alg)
	}
	etag := etagOfMD5(in.md5)
	if err := h.putPart(q, id, n, partRec{ETag: etag, Size: in.size, Blob: in.blob, Checksum: ck}); err != nil {
		h.discard(in)
		return err
	}
	setChecksumHeaders(q.w, ck)
	setSSEHeader(q.w, up.SSE)
	q.w.Header().Set("Etag", etag)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// putPart records a part (replacing an earlier upload of the same number).
func (h *Handler) putPart(q *request, id string, n int, rec partRec) error {
	return h.m.PutPart(q.ctx, q.bucket, q.key, id, n, rec)
}

func (h *Handler) completeMultipartUpload(q *request) error {
	cond, cerr := parseWriteCond(q.r, q.query)
	if cerr != nil {
		return cerr
	}
	id := q.query.Get("uploadId")
	var req completeMultipartUpload
	if err := readXML(q, &req); err != nil {
		return err
	}
	if len(req.Parts) == 0 {
		return errMalformedXML()
	}
	for i, p := range req.Parts {
		if p.PartNumber < 1 || p.PartNumber > MaxParts {
			return errInvalidPart()
		}
		if i > 0 && p.PartNumber <= req.Parts[i-1].PartNumber {
			return errInvalidPartOrder()
		}
	}
	res, err := h.m.CompleteUpload(q.ctx, q.bucket, q.key, id, s3model.Completion{
		Assemble: func(up uploadRec, parts []s3model.PartEntry) (version, error) {
			v, err := h.assemble(up, parts, req.Parts)
			if err != nil {
				return v, err
			}
			return v, checkCompleteChecksum(q.r, v.Checksum)
		},
		Check: func(st s3model.State, snapshot uint64) error {
			if e := cond.check(q.key, st, &snapshot); e != nil {
				return e
			}
			return nil
		},
		RepeatETag: repeatETag(req.Parts), RepeatParts: len(req.Parts),
	})
	if err != nil {
		return err
	}
	setWrittenVersionHeader(q.w, res.Version.VersionID)
	setSSEHeader(q.w, res.Version.SSE)
	return writeXML(q.w, http.StatusOK, completeMultipartUploadResult{
		NS: s3NS, Location: "/" + q.bucket + "/" + q.key, Bucket: q.bucket, Key: q.key, ETag: res.Version.ETag,
		checksumFields: checksumXML(res.Version.Checksum),
	})
}

// repeatETag is the multipart ETag of a part list, which identifies the
// version a repeated CompleteMultipartUpload made before ("" when the
// list's ETags are malformed: no repeat is recognised).
func repeatETag(list []completePart) string {
	etags := make([]string, 0, len(list))
	for _, p := range list {
		etags = append(etags, p.ETag)
	}
	want, err := multipartETag(etags)
	if err != nil {
		return ""
	}
	return want
}

// assemble checks the listed parts against the uploaded ones (InvalidPart,
// EntityTooSmall) and builds the object version.
func (h *Handler) assemble(up uploadRec, parts []s3model.PartEntry, list []completePart) (version, error) {
	byNum := make(map[int]partRec, len(parts))
	for _, p := range parts {
		byNum[p.Number] = p.Part
	}
	v := version{ContentType: up.ContentType, Meta: up.Meta, Headers: up.Headers, Parts: len(list), Tags: up.Tags, SSE: up.SSE}
	etags := make([]string, 0, len(list))
	for _, p := range list {
		rec, ok := byNum[p.PartNumber]
		if !ok || unquote(p.ETag) != unquote(rec.ETag) {
			return version{}, errInvalidPart()
		}
		if c := p.checksum(up.ChecksumAlg); c != "" && (rec.Checksum == nil || rec.Checksum.Value != c) {
			return version{}, errInvalidPart()
		}
	}
	chosen := make([]partRec, 0, len(list))
	for i, p := range list {
		rec := byNum[p.PartNumber]
		if i < len(list)-1 && rec.Size < h.opts.MinPartSize {
			return version{}, errEntityTooSmall()
		}
		etags = append(etags, rec.ETag)
		v.Segments = append(v.Segments, segment{Blob: rec.Blob, Size: rec.Size})
		v.Size += rec.Size
		chosen = append(chosen, rec)
	}
	if v.Checksum = multipartChecksum(up.ChecksumAlg, up.ChecksumTyp, chosen); v.Checksum != nil {
		for _, rec := range chosen {
			v.PartSums = append(v.PartSums, rec.Checksum.Value)
		}
	}
	var err error
	v.ETag, err = multipartETag(etags)
	return v, err
}

func (h *Handler) abortMultipartUpload(q *request) error {
	id := q.query.Get("uploadId")
	if err := h.m.AbortUpload(q.ctx, q.bucket, q.key, id); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) listParts(q *request) error {
	id := q.query.Get("uploadId")
	maxParts, err := maxKeysParam(q, "max-parts")
	if err != nil {
		return err
	}
	marker := 0
	if v := q.query.Get("part-number-marker"); v != "" {
		marker, err = strconv.Atoi(v)
		if err != nil || marker < 0 {
			return errInvalidArgument("Invalid part-number-marker", "part-number-marker", v)
		}
	}
	res := listPartsResult{NS: s3NS, Bucket: q.bucket, Key: q.key, UploadID: id, Initiator: theOwner,
		Owner: theOwner, StorageClass: "STANDARD", PartNumberMarker: marker, MaxParts: maxParts}
	up, parts, err := h.m.Parts(q.bucket, q.key, id)
	if err != nil {
		return err
	}
	if up.ChecksumAlg != "" {
		res.ChecksumAlgorithm, res.ChecksumType = strings.ToUpper(up.ChecksumAlg), up.ChecksumTyp
	}
	for _, p := range parts {
		if p.Number <= marker {
			continue
		}
		if len(res.Parts) == maxParts {
			res.IsTruncated = true
			break
		}
		res.Parts = append(res.Parts, partInfo{PartNumber: p.Number, LastModified: isoTime(time.Unix(0, p.Modified)), ETag: p.ETag, Size: p.Size,
			checksumFields: checksumXML(p.Checksum)})
		res.NextPartNumberMarker = p.Number
	}
	return writeXML(q.w, http.StatusOK, res)
}

func (h *Handler) listMultipartUploads(q *request) error {
	p, err := listingParams(q, "max-uploads")
	if err != nil {
		return err
	}
	max, enc, prefix, delim := p.max, p.enc, p.prefix, p.delim
	keyMarker, idMarker := q.query.Get("key-marker"), q.query.Get("upload-id-marker")
	res := listMultipartUploadsResult{NS: s3NS, Bucket: q.bucket, KeyMarker: encodeIf(enc, keyMarker), UploadIDMarker: idMarker,
		Prefix: encodeIf(enc, prefix), Delimiter: encodeIf(enc, delim), MaxUploads: max, EncodingType: enc}
	page, err := h.m.ListUploads(q.bucket, s3model.UploadsQuery{Prefix: prefix, Delimiter: delim,
		KeyMarker: keyMarker, UploadIDMarker: idMarker, Max: max})
	if err != nil {
		return err
	}
	res.IsTruncated = page.Truncated
	res.NextKeyMarker, res.NextUploadIDMarker = encodeIf(enc, page.NextKey), page.NextUploadID
	for _, u := range page.Uploads {
		res.Uploads = append(res.Uploads, uploadInfo{Key: encodeIf(enc, u.Key), UploadID: u.UploadID, Initiator: theOwner,
			Owner: theOwner, StorageClass: "STANDARD", Initiated: isoTime(time.Unix(0, u.Initiated))})
	}
	res.CommonPrefixes = commonPrefixes(page.Prefixes, enc)
	return writeXML(q.w, http.StatusOK, res)
}
