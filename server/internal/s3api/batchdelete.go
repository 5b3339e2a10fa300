package s3api

import (
	"net/http"

	"github.com/latchkey/latchkey/server/internal/s3model"
)

// maxDeleteObjects is the most keys one DeleteObjects request may name.
const maxDeleteObjects = 1000

// deleteObjects deletes up to 1000 keys in one engine Update. Per-key
// failures (a false <ETag> precondition, a missing key under <ETag>) are
// reported inside the 200 <DeleteResult>, never as the request's status.
func (h *Handler) deleteObjects(q *request) error {
	req, err := readDeleteRequest(q)
	if err != nil {
		return err
	}
	items := deleteItems(req.Objects)
	outs, errs, err := h.deleteValid(q, items)
	if err != nil {
		return err
	}
	return writeXML(q.w, http.StatusOK, deleteResultOf(items, outs, errs, req.Quiet))
}

// readDeleteRequest reads and checks the <Delete> body: its checksum
// header (the verifier leaves a POST body's to us; it checks PUT bodies
// only), Content-MD5, the XML, and 1 to 1000 objects.
func readDeleteRequest(q *request) (deleteRequest, error) {
	var req deleteRequest
	sum, err := requestChecksum(q.r)
	if err != nil {
		return req, err
	}
	data, err := readAllLimited(q, maxXMLBody)
	if err != nil {
		return req, err
	}
	if sum != nil {
		sum.Write(data)
		if err := sum.verify(); err != nil {
			return req, err
		}
	}
	if err := unmarshalXML(data, &req); err != nil {
		return req, err
	}
	if len(req.Objects) == 0 || len(req.Objects) > maxDeleteObjects {
		return req, errMalformedXML()
	}
	return req, nil
}

// deleteItem is one <Object> of a DeleteObjects request: its deletion,
// or the error that refuses it before any state is read.
type deleteItem struct {
	obj deleteObject
	del s3model.Deletion
	err *Error
}

// deleteItems validates each <Object> and builds its deletion.
func deleteItems(objs []deleteObject) []deleteItem {
	items := make([]deleteItem, len(objs))
	for i, o := range objs {
		it := deleteItem{obj: o, err: checkDeleteObject(o)}
		var cond deleteCond
		if o.ETag != nil {
			cond = deleteCond{IfMatch: *o.ETag}
			if *o.ETag == "" {
				cond.IfMatch = `""`
			}
		}
		it.del = s3model.Deletion{Key: o.Key, VersionID: o.VersionID, ByID: o.VersionID != "", Check: cond.decide(o.Key)}
		items[i] = it
	}
	return items
}

// checkDeleteObject is the per-key refusal of an <Object>, or nil.
func checkDeleteObject(o deleteObject) *Error {
	switch {
	case o.Key == "":
		return errInvalidArgument("Invalid key", "Key", "")
	case len(o.Key) > MaxKeyLength || !validKeyChars(o.Key):
		return errKeyTooLong()
	case o.LastModifiedTime != nil || o.Size != nil:
		return errNotImplemented("A header you provided implies functionality that is not implemented")
	case o.VersionID != "" && o.ETag != nil:
		return errNotImplemented("A header you provided implies functionality that is not implemented")
	case o.VersionID != "" && o.VersionID != nullVersion:
		if _, ok := parseVersionID(o.VersionID); !ok {
			return errInvalidArgument("Invalid version id specified", "versionId", o.VersionID)
		}
	}
	return nil
}

// deleteValid deletes the items that passed validation, in one engine
// Update, and returns each item's outcome or per-key error by index.
func (h *Handler) deleteValid(q *request, items []deleteItem) ([]s3model.Deleted, []*Error, error) {
	outs := make([]s3model.Deleted, len(items))
	errs := make([]*Error, len(items))
	var (
		ds  []s3model.Deletion
		idx []int
	)
	for i, it := range items {
		if it.err != nil {
			errs[i] = it.err
			continue
		}
		ds = append(ds, it.del)
		idx = append(idx, i)
	}
	done, refused, err := h.m.DeleteMany(q.ctx, q.bucket, ds)
	if err != nil {
		return nil, nil, err
	}
	for j, i := range idx {
		outs[i] = done[j]
		if refused[j] != nil {
			errs[i] = asError(refused[j])
		}
	}
	return outs, errs, nil
}

// deleteResultOf renders the <DeleteResult>: every error, and unless quiet
// every deleted key.
func deleteResultOf(items []deleteItem, outs []s3model.Deleted, errs []*Error, quiet bool) deleteResult {
	res := deleteResult{NS: s3NS}
	for i, it := range items {
		if e := errs[i]; e != nil {
			res.Errors = append(res.Errors, deleteError{Key: it.obj.Key, VersionID: it.obj.VersionID, Code: e.Code, Message: e.Message})
			continue
		}
		if quiet {
			continue
		}
		d := deletedEntry{Key: it.obj.Key, VersionID: it.obj.VersionID}
		if outs[i].Marker {
			d.DeleteMarker = true
			d.DeleteMarkerVersionID = outs[i].VersionID
		}
		res.Deleted = append(res.Deleted, d)
	}
	return res
}
