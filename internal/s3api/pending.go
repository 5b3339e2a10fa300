package s3api

// Operations not built yet answer 501 NotImplemented.

func (h *Handler) deleteObjects(q *request) error  { return errNotImplemented("not implemented yet") }
func (h *Handler) uploadPartCopy(q *request) error { return errNotImplemented("not implemented yet") }
func (h *Handler) copyObject(q *request) error     { return errNotImplemented("not implemented yet") }
