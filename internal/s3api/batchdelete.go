package s3api

import (
	"errors"
	"net/http"

	"github.com/latchkey/latchkey/internal/engine"
)

// maxDeleteObjects is the most keys one DeleteObjects request may name.
const maxDeleteObjects = 1000

// deleteObjects deletes up to 1000 keys in one engine Update. Per-key
// failures (a false <ETag> precondition, a missing key under <ETag>) are
// reported inside the 200 <DeleteResult>, never as the request's status.
func (h *Handler) deleteObjects(q *request) error {
	// The checksum header of a POST describes its body; the verifier
	// leaves it to us (it checks PUT bodies only).
	sum, err := requestChecksum(q.r)
	if err != nil {
		return err
	}
	data, err := readAllLimited(q, maxXMLBody)
	if err != nil {
		return err
	}
	if sum != nil {
		sum.Write(data)
		if err := sum.verify(); err != nil {
			return err
		}
	}
	var req deleteRequest
	if err := unmarshalXML(data, &req); err != nil {
		return err
	}
	if len(req.Objects) == 0 || len(req.Objects) > maxDeleteObjects {
		return errMalformedXML()
	}
	type item struct {
		obj  deleteObject
		cond deleteCond
		err  *Error
	}
	items := make([]item, len(req.Objects))
	for i, o := range req.Objects {
		it := item{obj: o}
		switch {
		case o.Key == "" || len(o.Key) > MaxKeyLength || !validKeyChars(o.Key):
			it.err = errKeyTooLong()
			if o.Key == "" {
				it.err = errInvalidArgument("Invalid key", "Key", "")
			}
		case o.LastModifiedTime != nil || o.Size != nil:
			it.err = errNotImplemented("A header you provided implies functionality that is not implemented")
		case o.VersionID != "" && o.ETag != nil:
			it.err = errNotImplemented("A header you provided implies functionality that is not implemented")
		case o.VersionID != "" && o.VersionID != nullVersion:
			if _, ok := parseVersionID(o.VersionID); !ok {
				it.err = errInvalidArgument("Invalid version id specified", "versionId", o.VersionID)
			}
		}
		if o.ETag != nil {
			it.cond = deleteCond{IfMatch: *o.ETag}
			if *o.ETag == "" {
				it.cond.IfMatch = `""`
			}
		}
		items[i] = it
	}
	outs := make([]deleteOutcome, len(items))
	errs := make([]*Error, len(items))
	_, err = h.e.Update(q.ctx, func(tx *engine.Tx) error {
		s := h.store(tx)
		if _, err := s.mustBucket(q.bucket); err != nil {
			return err
		}
		for i, it := range items {
			outs[i], errs[i] = deleteOutcome{}, it.err
			if it.err != nil {
				continue
			}
			out, err := deleteOne(s, q.bucket, it.obj.Key, it.obj.VersionID, it.obj.VersionID != "", it.cond)
			var e *Error
			switch {
			case errors.As(err, &e):
				errs[i] = e // checked before any write of this key
			case err != nil:
				return err
			default:
				outs[i] = out
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	res := deleteResult{NS: s3NS}
	var dropped []string
	for i, it := range items {
		if e := errs[i]; e != nil {
			res.Errors = append(res.Errors, deleteError{Key: it.obj.Key, VersionID: it.obj.VersionID, Code: e.Code, Message: e.Message})
			continue
		}
		dropped = append(dropped, outs[i].dropped...)
		if req.Quiet {
			continue
		}
		d := deletedEntry{Key: it.obj.Key, VersionID: it.obj.VersionID}
		if outs[i].marker {
			d.DeleteMarker = true
			d.DeleteMarkerVersionID = outs[i].versionID
		}
		res.Deleted = append(res.Deleted, d)
	}
	h.removeBlobs(dropped)
	return writeXML(q.w, http.StatusOK, res)
}
