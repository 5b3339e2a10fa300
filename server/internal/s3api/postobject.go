package s3api

import (
	"bytes"
	"crypto/md5"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// Limits of a PostObject form (browser form upload).
const (
	// MaxPostFormData bounds the multipart data before the file part (the
	// other fields, their part headers and boundaries); more is 400
	// MaxPostPreDataLengthExceededError. AWS allows 20 KB of fields.
	MaxPostFormData = 64 << 10
)

// PostAuthenticator is implemented by an Authenticator that can verify a
// PostObject form's signature (*sigv4.Verifier does). Without it, signed
// forms are refused.
type PostAuthenticator interface {
	VerifyPost(f sigv4.PostForm) (principal string, err error)
}

// isPostObject tells a browser form upload (POST with no query and no
// SigV4 header or query auth; the caller checks that the path names a
// bucket only) from every other request.
func isPostObject(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.RawQuery == "" && !sigv4.Signed(r)
}

var errPostNotMultipart = func() *Error {
	e := newErr(http.StatusPreconditionFailed, "PreconditionFailed", msgPrecondition)
	e.Condition = "Bucket POST must be of the enclosure-type multipart/form-data"
	return e
}

func errMalformedPOST() *Error {
	return newErr(http.StatusBadRequest, "MalformedPOSTRequest", "The body of your POST request is not well-formed multipart/form-data.")
}

func errPostMissingField(name string) *Error {
	return errInvalidArgument("Bucket POST must contain a field named '"+name+"'.  If it is specified, please check the order of the fields.", name, "")
}

// postForm is a parsed form: the fields before the file (lower-case names,
// first value kept), and the file part, positioned at its content.
type postForm struct {
	fields   map[string]string
	file     *multipart.Part
	filename string
	hasName  bool
}

// readPostForm reads fields up to the file part (named "file"; AWS
// ignores what follows it), at most MaxPostFormData bytes of them.
func readPostForm(q *request) (*postForm, error) {
	mt, params, err := mime.ParseMediaType(q.r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return nil, errPostNotMultipart()
	}
	if params["boundary"] == "" {
		return nil, errMalformedPOST()
	}
	budget := &budgetReader{r: q.body, n: MaxPostFormData}
	mr := multipart.NewReader(budget, params["boundary"])
	f := &postForm{fields: map[string]string{}}
	for {
		p, err := mr.NextPart()
		switch {
		case errors.Is(err, errPostFormTooLarge):
			return nil, newErr(http.StatusBadRequest, "MaxPostPreDataLengthExceededError", "Your POST request fields preceding the upload file were too large.")
		case errors.Is(err, io.EOF):
			e := errInvalidArgument("POST requires exactly one file upload per request.", "file", "0")
			return nil, e
		case err != nil:
			return nil, errMalformedPOST()
		}
		name := strings.ToLower(p.FormName())
		if name == "file" {
			budget.n = -1 // the file itself is bounded by the policy and MaxObjectSize
			f.file = p
			_, params, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
			f.filename, f.hasName = params["filename"]
			return f, nil
		}
		v, err := io.ReadAll(p)
		if errors.Is(err, errPostFormTooLarge) {
			return nil, newErr(http.StatusBadRequest, "MaxPostPreDataLengthExceededError", "Your POST request fields preceding the upload file were too large.")
		}
		if err != nil {
			return nil, errMalformedPOST()
		}
		if _, dup := f.fields[name]; !dup && name != "" {
			f.fields[name] = string(v)
		}
	}
}

var errPostFormTooLarge = errors.New("s3api: post form fields too large")

// budgetReader fails once more than n bytes were read; n < 0 is no limit.
type budgetReader struct {
	r io.Reader
	n int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, errPostFormTooLarge
	}
	if b.n > 0 && int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	if b.n > 0 {
		b.n -= int64(n)
	}
	return n, err
}

// postObject serves a browser form upload: it checks the form's signature
// and policy (expiration, every condition, every field covered), stores
// the file as PutObject would and answers 204, 200 or 201 per
// success_action_status, or 303 to success_action_redirect.
func (h *Handler) postObject(q *request) error {
	f, err := readPostForm(q)
	if err != nil {
		return err
	}
	fd := f.fields
	key, ok := fd["key"]
	if !ok {
		return errPostMissingField("key")
	}
	if f.hasName {
		key = strings.ReplaceAll(key, "${filename}", f.filename)
		fd["key"] = key
	}
	if err := h.authorizePost(q, fd); err != nil {
		return err
	}
	var minSize, maxSize int64 = 0, MaxObjectSize
	if pol, ok := fd["policy"]; ok {
		p, err := parsePostPolicy(pol)
		if err != nil {
			return err
		}
		now := time.Now
		if h.opts.Now != nil {
			now = h.opts.Now
		}
		if minSize, maxSize, err = p.check(fd, q.bucket, now()); err != nil {
			return err
		}
	}
	if err := checkPostKey(key); err != nil {
		return err
	}
	q.key = key
	if _, ok := fd["tagging"]; ok {
		return errNotImplemented("The tagging form field is not implemented")
	}
	return h.storePost(q, f, minSize, maxSize)
}

// authorizePost verifies the form's SigV4 fields, or admits an unsigned
// form when the server serves anonymous requests.
func (h *Handler) authorizePost(q *request, fd map[string]string) error {
	_, hasSig := fd["x-amz-signature"]
	_, hasPolicy := fd["policy"]
	if !hasSig && !hasPolicy {
		if h.opts.Anonymous {
			return nil
		}
		return errAccessDenied()
	}
	for _, n := range []string{"x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature", "policy"} {
		if _, ok := fd[n]; !ok {
			name := n
			if n != "policy" {
				name = "X-Amz-" + strings.ToUpper(n[6:7]) + n[7:]
			}
			return errPostMissingField(name)
		}
	}
	pa, ok := h.opts.Auth.(PostAuthenticator)
	if !ok {
		return errAccessDenied()
	}
	_, err := pa.VerifyPost(sigv4.PostForm{Algorithm: fd["x-amz-algorithm"], Credential: fd["x-amz-credential"],
		Date: fd["x-amz-date"], Signature: fd["x-amz-signature"], Policy: fd["policy"]})
	return err
}

func checkPostKey(key string) error {
	switch {
	case key == "":
		return errInvalidArgument("User key must have a length greater than 0.", "key", "")
	case len(key) > MaxKeyLength:
		return errKeyTooLong()
	case !validKeyChars(key):
		return errInvalidArgument("Object key contains an unsupported character", "key", "")
	}
	return nil
}

// postHeaders are the form fields stored with the object, as the headers
// of a PutObject would be.
var postHeaders = []string{"Cache-Control", "Content-Type", "Content-Disposition", "Content-Encoding", "Expires"}

// storePost stores the file part as PutObject stores a body and answers.
func (h *Handler) storePost(q *request, f *postForm, minSize, maxSize int64) error {
	hdr := http.Header{}
	for _, n := range postHeaders {
		if v, ok := f.fields[strings.ToLower(n)]; ok {
			hdr.Set(n, v)
		}
	}
	if hdr.Get("Content-Type") == "" {
		hdr.Set("Content-Type", "binary/octet-stream")
	}
	for n, v := range f.fields {
		switch {
		case n == "acl":
			hdr.Set("X-Amz-Acl", v)
		case strings.HasPrefix(n, "x-amz-") && !postSigField(n):
			hdr.Set(n, v)
		}
	}
	synth := &http.Request{Method: http.MethodPut, Header: hdr, URL: q.r.URL}
	alg, err := h.checkSSE(&request{r: synth}, sseWrite)
	if err != nil {
		return err
	}
	sse, err := h.objectSSE(q.bucket, alg)
	if err != nil {
		return err
	}
	ct, hdrs, meta, err := objectAttrs(synth)
	if err != nil {
		return err
	}
	sum, err := requestChecksum(synth)
	if err != nil {
		return err
	}
	var body io.Reader = f.file
	if sum != nil {
		body = io.TeeReader(body, sum)
	}
	snap, err := h.precheck(q, writeCond{})
	if err != nil {
		return err
	}
	in, err := h.ingestUpTo(body, maxSize, h.sealingFor(sse, q.bucket, q.key))
	if err != nil {
		return err
	}
	if in.size < minSize {
		h.discard(in)
		e := newErr(http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size")
		e.ProposedSize, e.MinSizeAllowed = strconv.FormatInt(in.size, 10), strconv.FormatInt(minSize, 10)
		return e
	}
	if err := sum.verify(); err != nil {
		h.discard(in)
		return err
	}
	v := version{
		ETag: etagOfMD5(in.md5), Size: in.size, ContentType: ct, Headers: hdrs, Meta: meta,
		Inline: in.blob == "", Segments: in.segments(), Checksum: verifiedChecksum(q, sum, nil),
		SSE: sse,
	}
	if v.Checksum != nil {
		v.Checksum.Type = checksumFullObject
	}
	res, err := h.publish(q, writeCond{}, &snap, v, in.inline)
	if err != nil {
		h.discard(in)
		return err
	}
	setSSEHeader(q.w, res.Version.SSE)
	return h.answerPost(q, f.fields, res.Version.ETag, res.Version.VersionID)
}

func postSigField(n string) bool {
	switch n {
	case "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature", "x-amz-security-token":
		return true
	}
	return false
}

// ingestUpTo stores a body of unknown length, at most max bytes (more is
// 400 EntityTooLarge): inline when it fits, else in a blob; with seal set,
// sealed as ingestSealed stores it.
func (h *Handler) ingestUpTo(src io.Reader, max int64, seal *sealing) (ingested, error) {
	head := make([]byte, min(int64(inlineMax), max)+1)
	n, err := io.ReadFull(src, head)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return h.ingestSealed(bytes.NewReader(head[:n]), int64(n), true, seal)
	case err != nil:
		return ingested{}, postBodyError(err)
	}
	if int64(n) > max {
		return ingested{}, errPostTooLarge(int64(n), max)
	}
	bs, err := h.newBlobSink(seal)
	if err != nil {
		return ingested{}, err
	}
	sum := md5.New()
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	total, err := copyCounting(io.MultiWriter(bs.w, sum), io.LimitReader(io.MultiReader(bytes.NewReader(head), src), max+1), *bp)
	if err == nil && total > max {
		err = errPostTooLarge(total, max)
	}
	if err != nil {
		err = postBodyError(err)
	}
	id, err := bs.finish(err)
	if err != nil {
		return ingested{}, err
	}
	return ingested{blob: id, size: total, md5: sum.Sum(nil)}, nil
}

func errPostTooLarge(proposed, max int64) *Error {
	e := newErr(http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
	e.ProposedSize, e.MaxSizeAllowed = strconv.FormatInt(proposed, 10), strconv.FormatInt(max, 10)
	return e
}

// postBodyError: a file part cut short (no closing boundary) is a
// malformed form; our own errors pass.
func postBodyError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return errMalformedPOST()
}

// answerPost writes PostObject's success response.
func (h *Handler) answerPost(q *request, fd map[string]string, etag, versionID string) error {
	setWrittenVersionHeader(q.w, versionID)
	scheme := "http"
	if q.r.TLS != nil {
		scheme = "https"
	}
	loc := scheme + "://" + q.r.Host + "/" + url.PathEscape(q.bucket) + "/" + strings.ReplaceAll(url.PathEscape(q.key), "%2F", "/")
	redirect, ok := fd["success_action_redirect"]
	if !ok {
		redirect = fd["redirect"]
	}
	if u, err := url.Parse(redirect); redirect != "" && err == nil && u.IsAbs() && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		v := u.Query()
		v.Set("bucket", q.bucket)
		v.Set("key", q.key)
		v.Set("etag", etag)
		u.RawQuery = v.Encode()
		q.w.Header().Set("Location", u.String())
		q.w.WriteHeader(http.StatusSeeOther)
		return nil
	}
	q.w.Header().Set("ETag", etag)
	q.w.Header().Set("Location", loc)
	switch fd["success_action_status"] {
	case "200":
		q.w.WriteHeader(http.StatusOK)
		return nil
	case "201":
		return writeXML(q.w, http.StatusCreated, postResponse{Location: loc, Bucket: q.bucket, Key: q.key, ETag: etag})
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}
