package s3api

// Operations not built yet answer 501 NotImplemented.

func (h *Handler) listMultipartUploads(q *request) error {
	return errNotImplemented("not implemented yet")
}
func (h *Handler) deleteObjects(q *request) error  { return errNotImplemented("not implemented yet") }
func (h *Handler) uploadPartCopy(q *request) error { return errNotImplemented("not implemented yet") }
func (h *Handler) uploadPart(q *request) error     { return errNotImplemented("not implemented yet") }
func (h *Handler) copyObject(q *request) error     { return errNotImplemented("not implemented yet") }
func (h *Handler) listParts(q *request) error      { return errNotImplemented("not implemented yet") }
func (h *Handler) abortMultipartUpload(q *request) error {
	return errNotImplemented("not implemented yet")
}
func (h *Handler) createMultipartUpload(q *request) error {
	return errNotImplemented("not implemented yet")
}
func (h *Handler) completeMultipartUpload(q *request) error {
	return errNotImplemented("not implemented yet")
}
func (s store) dropUploads(bucket string) ([]string, error) { return nil, nil }
