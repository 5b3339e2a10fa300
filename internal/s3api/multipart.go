package s3api

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/engine"
)

// Multipart uploads: the upload record snapshots the key's last-mutation
// index at create (the 409 rule: docs/wire-s3.md, "Concurrent writes"); parts are blobs; Complete
// publishes a version whose segments are the chosen parts' blobs, so no
// byte is copied.

func (s store) upload(bucket, key, id string) (uploadRec, bool, error) {
	b := s.rb(tblUploads)
	if b == nil {
		return uploadRec{}, false, nil
	}
	v := b.Get(uploadKey(bucket, key, id))
	if v == nil {
		return uploadRec{}, false, nil
	}
	rec, err := decode[uploadRec](v)
	return rec, err == nil, err
}

func (s store) mustUpload(bucket, key, id string) (uploadRec, error) {
	if _, err := s.mustBucket(bucket); err != nil {
		return uploadRec{}, err
	}
	rec, ok, err := s.upload(bucket, key, id)
	if err != nil {
		return rec, err
	}
	if !ok {
		return rec, errNoSuchUpload(id)
	}
	return rec, nil
}

// parts returns the parts of an upload in part-number order.
func (s store) parts(id string) ([]int, []partRec, error) {
	b := s.rb(tblParts)
	if b == nil {
		return nil, nil, nil
	}
	p := []byte(id + "/")
	var nums []int
	var recs []partRec
	c := b.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		rec, err := decode[partRec](v)
		if err != nil {
			return nil, nil, err
		}
		n := int(k[len(p)])<<24 | int(k[len(p)+1])<<16 | int(k[len(p)+2])<<8 | int(k[len(p)+3])
		nums = append(nums, n)
		recs = append(recs, rec)
	}
	return nums, recs, nil
}

// dropUpload deletes an upload and its part records; it returns the
// part blobs not in keep.
func (s store) dropUpload(bucket, key, id string, keep map[string]bool) ([]string, error) {
	nums, recs, err := s.parts(id)
	if err != nil {
		return nil, err
	}
	var blobs []string
	pb := s.tx.Bucket(tblParts)
	for i, n := range nums {
		if err := pb.Delete(partKey(id, n)); err != nil {
			return nil, err
		}
		if !keep[recs[i].Blob] {
			blobs = append(blobs, recs[i].Blob)
		}
	}
	if err := s.tx.Bucket(tblUploads).Delete(uploadKey(bucket, key, id)); err != nil {
		return nil, err
	}
	s.tx.Touch("\x00s3u/" + id)
	return blobs, nil
}

// dropUploads aborts every upload of a bucket.
func (s store) dropUploads(bucket string) ([]string, error) {
	b := s.rb(tblUploads)
	if b == nil {
		return nil, nil
	}
	type up struct{ key, id string }
	var ups []up
	bp := []byte(bucket + "/")
	c := b.Cursor()
	for k, _ := c.Seek(bp); k != nil && bytes.HasPrefix(k, bp); k, _ = c.Next() {
		key, id, ok := strings.Cut(string(k[len(bp):]), "\x00")
		if ok {
			ups = append(ups, up{key, id})
		}
	}
	var blobs []string
	for _, u := range ups {
		bl, err := s.dropUpload(bucket, u.key, u.id, nil)
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, bl...)
	}
	return blobs, nil
}

func (h *Handler) createMultipartUpload(q *request) error {
	ct, hdrs, meta, err := objectAttrs(q.r)
	if err != nil {
		return err
	}
	tags, err := headerTags(q.r)
	if err != nil {
		return err
	}
	alg, typ, err := uploadChecksum(q.r)
	if err != nil {
		return err
	}
	var id string
	_, err = h.e.Update(q.ctx, func(tx *engine.Tx) error {
		s := store{tx: tx}
		if _, err := s.mustBucket(q.bucket); err != nil {
			return err
		}
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		id = fmt.Sprintf("%016x%s", tx.Index(), hex.EncodeToString(rnd[:]))
		rec := uploadRec{Initiated: time.Now().UnixNano(), ContentType: ct, Meta: meta, Headers: hdrs,
			Snapshot: s.mod(q.bucket, q.key), Tags: tags,
			ChecksumAlg: alg, ChecksumTyp: typ}
		if err := tx.Bucket(tblUploads).Put(uploadKey(q.bucket, q.key, id), mustJSON(rec)); err != nil {
			return err
		}
		tx.Touch("\x00s3u/" + id)
		return nil
	})
	if err != nil {
		return err
	}
	if alg != "" {
		q.w.Header().Set("x-amz-checksum-algorithm", strings.ToUpper(alg))
		q.w.Header().Set("x-amz-checksum-type", typ)
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
	wantMD5, err := contentMD5(q.r)
	if err != nil {
		return err
	}
	size, err := declaredSize(q.r)
	if err != nil {
		return err
	}
	if size > MaxObjectSize {
		return errEntityTooLarge()
	}
	var up uploadRec
	if err := h.e.View(func(tx *engine.Tx) error {
		var err error
		up, err = store{tx: tx}.mustUpload(q.bucket, q.key, id)
		return err
	}); err != nil {
		return err
	}
	body, sum, err := checkedBody(q)
	if err != nil {
		return err
	}
	// The upload's algorithm is computed here too, for parts whose client
	// sent no checksum, so that Complete can derive the object's.
	body, computed := hashing(body, up.ChecksumAlg)
	in, err := h.ingestChecked(body, size, false, wantMD5, sum)
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
	q.w.Header().Set("ETag", etag)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// putPart records a part (replacing an earlier upload of the same number).
func (h *Handler) putPart(q *request, id string, n int, rec partRec) error {
	var dropped string
	_, err := h.e.Update(q.ctx, func(tx *engine.Tx) error {
		dropped = ""
		s := store{tx: tx}
		if _, err := s.mustUpload(q.bucket, q.key, id); err != nil {
			return err
		}
		if pb := tx.ReadBucket(tblParts); pb != nil {
			if old := pb.Get(partKey(id, n)); old != nil {
				if o, err := decode[partRec](old); err == nil {
					dropped = o.Blob
				}
			}
		}
		rec.Modified = time.Now().UnixNano()
		if err := tx.Bucket(tblParts).Put(partKey(id, n), mustJSON(rec)); err != nil {
			return err
		}
		tx.Touch("\x00s3u/" + id)
		return nil
	})
	if err == nil && dropped != "" {
		h.removeBlobs([]string{dropped})
	}
	return err
}

func (h *Handler) completeMultipartUpload(q *request) error {
	cond, cerr := parseWriteCond(q.r)
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
	var res published
	_, err := h.e.Update(q.ctx, func(tx *engine.Tx) error {
		res = published{}
		s := store{tx: tx}
		b, err := s.mustBucket(q.bucket)
		if err != nil {
			return err
		}
		up, ok, err := s.upload(q.bucket, q.key, id)
		if err != nil {
			return err
		}
		if !ok {
			done, found, err := s.completedBy(q.bucket, q.key, id, req.Parts)
			if err != nil || !found {
				return cmp.Or(err, error(errNoSuchUpload(id)))
			}
			res.v, res.versioning = done, b.Versioning
			return nil
		}
		v, err := h.assemble(s, id, up, req.Parts)
		if err != nil {
			return err
		}
		if err := checkCompleteChecksum(q.r, v.Checksum); err != nil {
			return err
		}
		st, err := s.state(q.bucket, q.key)
		if err != nil {
			return err
		}
		if e := cond.check(q.key, st, &up.Snapshot); e != nil {
			return e
		}
		keep := map[string]bool{}
		for _, sg := range v.Segments {
			keep[sg.Blob] = true
		}
		dropped, err := s.dropUpload(q.bucket, q.key, id, keep)
		if err != nil {
			return err
		}
		v.Modified = time.Now().UnixNano()
		v.Upload = id
		dropped = append(dropped, s.putVersion(q.bucket, q.key, b.Versioning, v, nil)...)
		res.dropped, res.versioning = dropped, b.Versioning
		res.v, _, err = s.current(q.bucket, q.key)
		return err
	})
	if err != nil {
		return err
	}
	h.removeBlobs(res.dropped)
	setVersionHeader(q.w, res.versioning, res.v.VersionID)
	return writeXML(q.w, http.StatusOK, completeMultipartUploadResult{
		NS: s3NS, Location: "/" + q.bucket + "/" + q.key, Bucket: q.bucket, Key: q.key, ETag: res.v.ETag,
		checksumFields: checksumXML(res.v.Checksum),
	})
}

// completedBy finds the version that upload id became, for a repeated
// CompleteMultipartUpload: it answers as the first one did when the part
// list is the same (its multipart ETag matches) and the version still
// exists.
func (s store) completedBy(bucket, key, id string, list []completePart) (version, bool, error) {
	etags := make([]string, 0, len(list))
	for _, p := range list {
		etags = append(etags, p.ETag)
	}
	want, err := multipartETag(etags)
	if err != nil {
		return version{}, false, nil
	}
	vs, err := s.versions(bucket, key)
	if err != nil {
		return version{}, false, err
	}
	for _, v := range vs {
		if v.Upload == id && v.Parts == len(list) && v.ETag == want {
			return v, true, nil
		}
	}
	return version{}, false, nil
}

// assemble checks the listed parts against the uploaded ones (InvalidPart,
// EntityTooSmall) and builds the object version.
func (h *Handler) assemble(s store, id string, up uploadRec, list []completePart) (version, error) {
	nums, recs, err := s.parts(id)
	if err != nil {
		return version{}, err
	}
	byNum := make(map[int]partRec, len(nums))
	for i, n := range nums {
		byNum[n] = recs[i]
	}
	v := version{ContentType: up.ContentType, Meta: up.Meta, Headers: up.Headers, Parts: len(list), Tags: up.Tags}
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
	v.ETag, err = multipartETag(etags)
	return v, err
}

func (h *Handler) abortMultipartUpload(q *request) error {
	id := q.query.Get("uploadId")
	var dropped []string
	_, err := h.e.Update(q.ctx, func(tx *engine.Tx) error {
		s := h.store(tx)
		if _, err := s.mustUpload(q.bucket, q.key, id); err != nil {
			return err
		}
		var err error
		dropped, err = s.dropUpload(q.bucket, q.key, id, nil)
		if err != nil {
			return err
		}
		s.tidyMod(q.bucket, q.key)
		return nil
	})
	if err != nil {
		return err
	}
	h.removeBlobs(dropped)
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
	err = h.e.View(func(tx *engine.Tx) error {
		s := store{tx: tx}
		up, err := s.mustUpload(q.bucket, q.key, id)
		if err != nil {
			return err
		}
		if up.ChecksumAlg != "" {
			res.ChecksumAlgorithm, res.ChecksumType = strings.ToUpper(up.ChecksumAlg), up.ChecksumTyp
		}
		nums, recs, err := s.parts(id)
		if err != nil {
			return err
		}
		for i, n := range nums {
			if n <= marker {
				continue
			}
			if len(res.Parts) == maxParts {
				res.IsTruncated = true
				break
			}
			r := recs[i]
			res.Parts = append(res.Parts, partInfo{PartNumber: n, LastModified: isoTime(time.Unix(0, r.Modified)), ETag: r.ETag, Size: r.Size,
				checksumFields: checksumXML(r.Checksum)})
			res.NextPartNumberMarker = n
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeXML(q.w, http.StatusOK, res)
}

func (h *Handler) listMultipartUploads(q *request) error {
	max, err := maxKeysParam(q, "max-uploads")
	if err != nil {
		return err
	}
	enc, err := encodingParam(q)
	if err != nil {
		return err
	}
	prefix, delim := q.query.Get("prefix"), q.query.Get("delimiter")
	keyMarker, idMarker := q.query.Get("key-marker"), q.query.Get("upload-id-marker")
	res := listMultipartUploadsResult{NS: s3NS, Bucket: q.bucket, KeyMarker: encodeIf(enc, keyMarker), UploadIDMarker: idMarker,
		Prefix: encodeIf(enc, prefix), Delimiter: encodeIf(enc, delim), MaxUploads: max, EncodingType: enc}
	err = h.e.View(func(tx *engine.Tx) error {
		s := store{tx: tx}
		if _, err := s.mustBucket(q.bucket); err != nil {
			return err
		}
		b := tx.ReadBucket(tblUploads)
		if b == nil {
			return nil
		}
		bp := []byte(q.bucket + "/")
		c := b.Cursor()
		lastCP := ""
		for k, v := c.Seek(append(bytes.Clone(bp), prefix...)); k != nil && bytes.HasPrefix(k, bp); k, v = c.Next() {
			key, id, ok := strings.Cut(string(k[len(bp):]), "\x00")
			if !ok || !strings.HasPrefix(key, prefix) {
				break
			}
			if keyMarker != "" && (key < keyMarker || key == keyMarker && (idMarker == "" || id <= idMarker)) {
				continue
			}
			cp := rollup(key, prefix, delim)
			if cp != "" && cp == lastCP {
				continue
			}
			if len(res.Uploads)+len(res.CommonPrefixes) == max {
				res.IsTruncated = true
				break
			}
			if cp != "" {
				lastCP = cp
				res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: encodeIf(enc, cp)})
				res.NextKeyMarker, res.NextUploadIDMarker = cp, ""
				continue
			}
			rec, err := decode[uploadRec](v)
			if err != nil {
				return err
			}
			res.Uploads = append(res.Uploads, uploadInfo{Key: encodeIf(enc, key), UploadID: id, Initiator: theOwner,
				Owner: theOwner, StorageClass: "STANDARD", Initiated: isoTime(time.Unix(0, rec.Initiated))})
			res.NextKeyMarker, res.NextUploadIDMarker = key, id
		}
		if !res.IsTruncated {
			res.NextKeyMarker, res.NextUploadIDMarker = "", ""
		}
		res.NextKeyMarker = encodeIf(enc, res.NextKeyMarker)
		return nil
	})
	if err != nil {
		return err
	}
	return writeXML(q.w, http.StatusOK, res)
}
