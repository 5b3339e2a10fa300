package s3model

import (
	"bytes"
	"context"
	"strings"
	"time"
)

// Completion is one CompleteMultipartUpload.
type Completion struct {
	// Assemble builds the object version from the upload and its parts
	// (the S3 rules on the listed parts); its error refuses the completion.
	Assemble func(up Upload, parts []PartEntry) (Version, error)
	// Check (nil: none) decides the write precondition against the key at
	// commit; snapshot is the key's last-mutation index when the upload
	// was created (the 409 rule).
	Check func(st State, snapshot uint64) error
	// RepeatETag and RepeatParts identify the version a completion of the
	// same part list made before: a repeated request whose upload is gone
	// is answered with it ("" : no repeat is recognised).
	RepeatETag  string
	RepeatParts int
}

// CompleteUpload publishes the upload's assembled version as the key's
// current one and deletes the upload, in one engine Update; the blobs of
// parts not used and of a replaced version are removed after the commit.
func (m *Model) CompleteUpload(ctx context.Context, bucket, key, id string, c Completion) (Put, error) {
	var res Put
	err := m.updateDropping(ctx, func(s *records) (dropped []string, err error) {
		res = Put{}
		b, err := s.mustBucket(bucket)
		if err != nil {
			return nil, err
		}
		res.Versioning = b.Versioning
		up, ok, err := s.upload(bucket, key, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			done, found, err := s.completedBy(bucket, key, id, c)
			if err == nil && !found {
				err = noSuchUpload(bucket, key, id)
			}
			res.Version = done
			return nil, err
		}
		v, err := s.assemble(id, up, c)
		if err != nil {
			return nil, err
		}
		st, err := s.state(bucket, key)
		if err != nil {
			return nil, err
		}
		if c.Check != nil {
			if err := c.Check(st, up.Snapshot); err != nil {
				return nil, err
			}
		}
		keep := make(map[string]bool, len(v.Segments))
		for _, sg := range v.Segments {
			keep[sg.Blob] = true
		}
		if dropped, err = s.dropUpload(bucket, key, id, keep); err != nil {
			return nil, err
		}
		v.Modified = time.Now().UnixNano()
		v.Upload = id
		var replaced []string
		res.Version, replaced = s.putVersion(bucket, key, b.Versioning, v, nil)
		return append(dropped, replaced...), nil
	})
	return res, err
}

// assemble builds the version of a completion from the upload's parts.
func (s *records) assemble(id string, up Upload, c Completion) (Version, error) {
	parts, err := s.parts(id)
	if err != nil {
		return Version{}, err
	}
	return c.Assemble(up, parts)
}

// completedBy finds the version that upload id became, for a repeated
// CompleteMultipartUpload: the same part list (its multipart ETag) and the
// version still exists.
func (s *records) completedBy(bucket, key, id string, c Completion) (Version, bool, error) {
	if c.RepeatETag == "" {
		return Version{}, false, nil
	}
	vs, err := s.versions(bucket, key)
	if err != nil {
		return Version{}, false, err
	}
	for _, v := range vs {
		if v.Upload == id && v.Parts == c.RepeatParts && v.ETag == c.RepeatETag {
			return v, true, nil
		}
	}
	return Version{}, false, nil
}

// UploadsQuery selects one page of ListMultipartUploads.
type UploadsQuery struct {
	Prefix, Delimiter         string
	KeyMarker, UploadIDMarker string
	Max                       int
}

// UploadEntry is one upload in progress of an UploadsPage.
type UploadEntry struct {
	Key, UploadID string
	Upload
}

// UploadsPage is one page of uploads in progress, in key then upload ID
// order, and the common prefixes among them.
type UploadsPage struct {
	Uploads   []UploadEntry
	Prefixes  []string
	Truncated bool
	// NextKey and NextUploadID resume a truncated listing ("" otherwise).
	NextKey, NextUploadID string
}

// ListUploads lists the uploads in progress of bucket.
func (m *Model) ListUploads(bucket string, q UploadsQuery) (UploadsPage, error) {
	var res UploadsPage
	err := m.view(func(s *records) error {
		res = UploadsPage{}
		if _, err := s.mustBucket(bucket); err != nil {
			return err
		}
		b := s.read(tblUploads)
		if b == nil {
			return nil
		}
		bp := bucketPrefix(bucket)
		c := b.Cursor()
		lastCP := ""
		for k, v := c.Seek(seekKey(bp, q.Prefix)); k != nil && bytes.HasPrefix(k, bp); k, v = c.Next() {
			key, id, ok := strings.Cut(string(k[len(bp):]), "\x00")
			if !ok || !strings.HasPrefix(key, q.Prefix) {
				break
			}
			if q.KeyMarker != "" && (key < q.KeyMarker || key == q.KeyMarker && (q.UploadIDMarker == "" || id <= q.UploadIDMarker)) {
				continue
			}
			cp := rollup(key, q.Prefix, q.Delimiter)
			if cp != "" && cp == lastCP {
				continue
			}
			if len(res.Uploads)+len(res.Prefixes) == q.Max {
				res.Truncated = true
				break
			}
			if cp != "" {
				lastCP = cp
				res.Prefixes = append(res.Prefixes, cp)
				res.NextKey, res.NextUploadID = cp, ""
				continue
			}
			rec, err := decode[Upload](v)
			if err != nil {
				return err
			}
			res.Uploads = append(res.Uploads, UploadEntry{Key: key, UploadID: id, Upload: rec})
			res.NextKey, res.NextUploadID = key, id
		}
		if !res.Truncated {
			res.NextKey, res.NextUploadID = "", ""
		}
		return nil
	})
	return res, err
}
