package s3api

import (
	"bytes"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/server/internal/s3model"
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
	// Only digits and dots can spell an IP address here (":" is not
	// allowed); parsing anything else would allocate its error.
	if strings.Trim(name, "0123456789.") == "" {
		if _, err := netip.ParseAddr(name); err == nil {
			return false
		}
	}
	return true
}

// MaxListBuckets is the largest max-buckets ListBuckets accepts, AWS's.
const MaxListBuckets = 10000

// listBuckets answers ListBuckets in name order. Without max-buckets every
// bucket is listed on one page, as AWS does for accounts under its quota;
// with it, a page holds at most that many and ContinuationToken (the
// opaque base64 of the page's last name) asks for the next. prefix
// filters by name.
func (h *Handler) listBuckets(q *request) error {
	limit, paged := 0, q.has("max-buckets")
	if paged {
		n, err := strconv.Atoi(q.query.Get("max-buckets"))
		if err != nil || n < 1 || n > MaxListBuckets {
			return errInvalidArgument("Argument max-buckets must be an integer between 1 and 10000", "max-buckets", q.query.Get("max-buckets"))
		}
		limit = n
	}
	after := ""
	if tok, ok := q.query["continuation-token"]; ok {
		m, ok := decodeToken(tok[0])
		if !ok || !validBucketName(m) {
			return errInvalidArgument("The continuation token provided is incorrect", "continuation-token", tok[0])
		}
		after = m
	}
	prefix := q.query.Get("prefix")
	bs, err := h.m.Buckets()
	if err != nil {
		return err
	}
	res := listAllMyBucketsResult{NS: s3NS, Owner: theOwner, Buckets: make([]bucketInfo, 0, min(len(bs), MaxListBuckets)), Prefix: prefix}
	for _, b := range bs {
		if b.Name <= after || !strings.HasPrefix(b.Name, prefix) {
			continue
		}
		if paged && len(res.Buckets) == limit {
			res.ContinuationToken = encodeToken(res.Buckets[limit-1].Name)
			break
		}
		res.Buckets = append(res.Buckets, bucketInfo{Name: b.Name, CreationDate: isoTime(time.Unix(0, b.Created)), BucketRegion: h.opts.Region})
	}
	return writeXML(q.w, http.StatusOK, res)
}

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
	// There is one principal, so an existing bucket is always ours. AWS
	// answers 200 for that in us-east-1 (a legacy behaviour SDKs rely on)
	// and 409 BucketAlreadyOwnedByYou in every other region.
	if err := h.m.CreateBucket(q.ctx, q.bucket); err != nil &&
		!(errors.Is(err, s3model.ErrBucketExists) && h.opts.Region == "us-east-1") {
		return err
	}
	q.w.Header().Set("Location", "/"+q.bucket)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (h *Handler) headBucket(q *request) error {
	if _, err := h.m.Bucket(q.bucket); err != nil {
		return err
	}
	q.w.Header().Set("X-Amz-Bucket-Region", h.opts.Region)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (h *Handler) getBucketLocation(q *request) error {
	if _, err := h.m.Bucket(q.bucket); err != nil {
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
	if err := h.m.DeleteBucket(q.ctx, q.bucket); err != nil {
		return err
	}
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
	if err := h.m.SetVersioning(q.ctx, q.bucket, cfg.Status); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (h *Handler) getBucketVersioning(q *request) error {
	rec, err := h.m.Bucket(q.bucket)
	if err != nil {
		return err
	}
	return writeXML(q.w, http.StatusOK, versioningConfiguration{NS: s3NS, Status: rec.Versioning})
}
