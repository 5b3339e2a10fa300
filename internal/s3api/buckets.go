package s3api

import (
	"bytes"
	"errors"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/engine"
)

const iso8601 = "2006-01-02T15:04:05.000Z"

func isoTime(t time.Time) string { return t.UTC().Format(iso8601) }

// validBucketName applies the S3 general purpose bucket naming rules.
func validBucketName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	first, last := name[0], name[len(name)-1]
	if first == '.' || first == '-' || last == '.' || last == '-' {
		return false
	}
	if strings.Contains(name, "..") || strings.HasPrefix(name, "xn--") ||
		strings.HasSuffix(name, "-s3alias") || strings.HasSuffix(name, "--ol-s3") {
		return false
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return false
	}
	return true
}

func (h *Handler) listBuckets(q *request) error {
	res := listAllMyBucketsResult{NS: s3NS, Owner: theOwner, Buckets: []bucketInfo{}}
	err := h.e.View(func(tx *engine.Tx) error {
		b := tx.ReadBucket(tblBuckets)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			rec, err := decode[bucketRec](v)
			if err != nil {
				return err
			}
			res.Buckets = append(res.Buckets, bucketInfo{Name: string(k), CreationDate: isoTime(time.Unix(0, rec.Created))})
			return nil
		})
	})
	if err != nil {
		return err
	}
	sort.Slice(res.Buckets, func(i, j int) bool { return res.Buckets[i].Name < res.Buckets[j].Name })
	return writeXML(q.w, http.StatusOK, res)
}

// errBucketExistsOK aborts CreateBucket's Update when the bucket exists
// and the answer is nonetheless 200 (us-east-1).
var errBucketExistsOK = errors.New("s3api: bucket exists; answer 200")

func (h *Handler) createBucket(q *request) error {
	var cfg createBucketConfiguration
	if q.r.ContentLength != 0 {
		data, err := readAllLimited(q, maxXMLBody)
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(data)) > 0 {
			if err := unmarshalXML(data, &cfg); err != nil {
				return err
			}
		}
	}
	now := time.Now()
	_, err := h.e.Update(q.ctx, func(tx *engine.Tx) error {
		s := store{tx: tx}
		if _, ok, err := s.bucket(q.bucket); err != nil {
			return err
		} else if ok {
			// There is one principal, so an existing bucket is always
			// ours. AWS answers 200 for that in us-east-1 (a legacy
			// behaviour SDKs rely on) and 409 BucketAlreadyOwnedByYou in
			// every other region.
			if h.opts.Region == "us-east-1" {
				return errBucketExistsOK
			}
			return errBucketOwned(q.bucket)
		}
		if err := tx.Bucket(tblBuckets).Put([]byte(q.bucket), mustJSON(bucketRec{Created: now.UnixNano()})); err != nil {
			return err
		}
		tx.Touch("\x00s3/" + q.bucket)
		return nil
	})
	if err != nil && err != errBucketExistsOK {
		return err
	}
	q.w.Header().Set("Location", "/"+q.bucket)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (h *Handler) headBucket(q *request) error {
	err := h.e.View(func(tx *engine.Tx) error {
		_, err := store{tx: tx}.mustBucket(q.bucket)
		return err
	})
	if err != nil {
		return err
	}
	q.w.Header().Set("x-amz-bucket-region", h.opts.Region)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (h *Handler) getBucketLocation(q *request) error {
	err := h.e.View(func(tx *engine.Tx) error {
		_, err := store{tx: tx}.mustBucket(q.bucket)
		return err
	})
	if err != nil {
		return err
	}
	loc := h.opts.Region
	if loc == "us-east-1" {
		loc = ""
	}
	return writeXML(q.w, http.StatusOK, locationConstraint{NS: s3NS, Value: loc})
}

// deleteBucket removes an empty bucket. Versions and delete markers make a
// bucket non-empty; in-progress multipart uploads are aborted with it.
func (h *Handler) deleteBucket(q *request) error {
	var blobs []string
	_, err := h.e.Update(q.ctx, func(tx *engine.Tx) error {
		blobs = blobs[:0]
		s := store{tx: tx}
		if _, err := s.mustBucket(q.bucket); err != nil {
			return err
		}
		bp := []byte(q.bucket + "/")
		if vb := tx.ReadBucket(tblVersions); vb != nil {
			if k, _ := vb.Cursor().Seek(bp); k != nil && bytes.HasPrefix(k, bp) {
				return errBucketNotEmpty(q.bucket)
			}
		}
		var err error
		blobs, err = s.dropUploads(q.bucket)
		if err != nil {
			return err
		}
		if err := tx.Bucket(tblBuckets).Delete([]byte(q.bucket)); err != nil {
			return err
		}
		mb := tx.Bucket(tblMod)
		c := mb.Cursor()
		for k, _ := c.Seek(bp); k != nil && bytes.HasPrefix(k, bp); k, _ = c.Seek(bp) {
			if err := mb.Delete(k); err != nil {
				return err
			}
		}
		tx.Touch("\x00s3/" + q.bucket)
		return nil
	})
	if err != nil {
		return err
	}
	h.removeBlobs(blobs)
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) putBucketVersioning(q *request) error {
	var cfg versioningConfiguration
	if err := readXML(q, &cfg); err != nil {
		return err
	}
	if cfg.Status != versioningEnabled && cfg.Status != versioningSuspended {
		return errMalformedXML()
	}
	_, err := h.e.Update(q.ctx, func(tx *engine.Tx) error {
		rec, err := store{tx: tx}.mustBucket(q.bucket)
		if err != nil {
			return err
		}
		rec.Versioning = cfg.Status
		if err := tx.Bucket(tblBuckets).Put([]byte(q.bucket), mustJSON(rec)); err != nil {
			return err
		}
		tx.Touch("\x00s3/" + q.bucket)
		return nil
	})
	if err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (h *Handler) getBucketVersioning(q *request) error {
	var rec bucketRec
	err := h.e.View(func(tx *engine.Tx) error {
		var err error
		rec, err = store{tx: tx}.mustBucket(q.bucket)
		return err
	})
	if err != nil {
		return err
	}
	return writeXML(q.w, http.StatusOK, versioningConfiguration{NS: s3NS, Status: rec.Versioning})
}

// removeBlobs deletes blobs no committed record references any more. A
// failure leaves an orphan for the engine's sweep at the next Open.
func (h *Handler) removeBlobs(ids []string) {
	for _, id := range ids {
		if err := h.e.RemoveBlob(id); err != nil {
			h.log.Warn("s3api: remove blob", "blob", id, "err", err)
		}
	}
}
