package s3api

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
	"github.com/latchkey/latchkey/server/internal/s3model"
)

// Limits. They follow AWS where AWS has one.
const (
	// MaxObjectSize is the largest single PUT (5 GiB), as S3.
	MaxObjectSize = 5 << 30
	// MaxKeyLength is the longest object key in bytes.
	MaxKeyLength = 1024
	// MaxHeaderBytes bounds the request's header section (names, values
	// and separators), as S3's 8 KiB; more is 400
	// RequestHeaderSectionTooLarge.
	MaxHeaderBytes = 8 << 10
	// MaxUserMetadata bounds the x-amz-meta-* names and values, in bytes.
	MaxUserMetadata = 2 << 10
	// MaxParts is the highest part number.
	MaxParts = 10000
	// maxXMLBody bounds request bodies of XML operations.
	maxXMLBody = 4 << 20
	// inlineMax is the largest body kept inside the metadata database
	// instead of a blob file.
	inlineMax = 32 << 10
)

// Authenticator verifies a request (the contract is in the sigv4 package
// doc; *sigv4.Verifier is
// the implementation): it returns the principal and the body to read from
// now on, de-chunked and verified while it streams. Its errors, from Verify
// and from the body's Read, are *sigv4.Error values.
type Authenticator interface {
	Verify(r *http.Request) (principal string, body io.ReadCloser, err error)
}

// Handler serves the S3 API. Create it with New.
type Handler struct {
	e      *engine.Engine // blobs; the records are m's
	m      *s3model.Model
	opts   Options
	log    *slog.Logger
	reqSeq atomic.Uint64
	reqPfx string

	// afterPrecheck, when set (tests only), runs after a write's
	// request-start snapshot and before its body is read.
	afterPrecheck atomic.Pointer[func()]
}

// New returns the S3 API handler over e. A nil opts means the defaults;
// a negative Options field is an error.
func New(e *engine.Engine, opts *Options) (*Handler, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Handler{e: e, opts: o, log: o.Logger}
	h.m = s3model.New(e, h.log)
	if o.SSE != nil {
		if err := h.m.UseMasterKey(o.SSE.KeyID()); err != nil {
			return nil, err
		}
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	h.reqPfx = strings.ToUpper(hex.EncodeToString(b[:]))
	return h, nil
}

// MustNew is New for options known to be valid (tests, examples): it
// panics on an error.
func MustNew(e *engine.Engine, opts *Options) *Handler {
	h, err := New(e, opts)
	if err != nil {
		panic(err)
	}
	return h
}

// requestID is the next x-amz-request-id: the handler's random prefix and
// a sequence number in 12 or more upper-case hex digits.
func (h *Handler) requestID() string {
	n := h.reqSeq.Add(1)
	if n >= 1<<48 {
		return fmt.Sprintf("%s%012X", h.reqPfx, n)
	}
	const digits = "0123456789ABCDEF"
	var b [8 + 12]byte
	copy(b[:8], h.reqPfx)
	for i := len(b) - 1; i >= 8; i-- {
		b[i] = digits[n&15]
		n >>= 4
	}
	return string(b[:])
}

// request is one parsed S3 request.
type request struct {
	r       *http.Request
	w       http.ResponseWriter
	ctx     context.Context
	id      string
	bucket  string
	key     string
	query   url.Values
	body    io.Reader
	hasBody bool
	// signed: the SigV4 verifier checked the request and checks its
	// body's x-amz-checksum-* while it streams.
	signed bool
	// sse is the server-side encryption the request asks for (checkSSE).
	sse string
}

// ServeHTTP routes one request and renders its error, if any.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := h.requestID()
	// One allocation for the three values (the names are canonical).
	vals := []string{id, "latchkey"}
	hd := w.Header()
	hd["X-Amz-Request-Id"] = vals[0:1:1]
	hd["X-Amz-Id-2"] = vals[0:1:1]
	hd["Server"] = vals[1:2:2]
	if err := h.serve(w, r, id); err != nil {
		err = modelError(err, r.Method)
		e := asError(err)
		if e.Status >= 500 && e.Status != http.StatusNotImplemented {
			h.log.Error("s3api: request failed", "method", r.Method, "path", r.URL.EscapedPath(), "err", err)
		}
		writeError(w, r, id, err)
	}
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, id string) error {
	if headerBytes(r.Header) > MaxHeaderBytes {
		return errRequestHeaderTooLarge()
	}
	// The query is parsed here, once; everything after reads req.query.
	req := &request{r: r, w: w, ctx: r.Context(), id: id, body: r.Body}
	if r.URL.RawQuery != "" {
		req.query = r.URL.Query()
	}
	if isPostObject(r) {
		// A browser form upload authenticates itself from its fields.
		if err := splitPath(h.requestPath(r), req); err != nil {
			return err
		}
		if req.bucket != "" && req.key == "" {
			return h.postObject(req)
		}
	}
	switch {
	case h.opts.Auth != nil && !(h.opts.Anonymous && !sigv4.Signed(r)):
		_, body, err := h.opts.Auth.Verify(r)
		if err != nil {
			var se *sigv4.Error
			var c codedError
			if errors.As(err, &se) || errors.As(err, &c) {
				return err
			}
			return errAccessDenied()
		}
		req.signed = true
		if body != nil {
			defer body.Close()
			req.body = body
		}
	case h.opts.Auth == nil && !h.opts.Anonymous:
		return errAccessDenied()
	default:
		// Served unauthenticated: an unsigned aws-chunked body (SDKs with
		// anonymous credentials over https) is decoded and its trailing
		// checksum verified as it streams; other bodies pass through.
		body, err := sigv4.Dechunk(r)
		if err != nil {
			return err
		}
		defer body.Close()
		req.body = body
	}
	if err := splitPath(h.requestPath(r), req); err != nil {
		return err
	}
	return h.route(req)
}

// requestPath is the escaped path with a virtual-hosted bucket prepended.
func (h *Handler) requestPath(r *http.Request) string {
	path := r.URL.EscapedPath()
	if b, ok := BucketFromHost(r.Host, h.opts.Domain); ok {
		path = "/" + url.PathEscape(b) + path
	}
	return path
}

// splitPath takes bucket and key from the escaped path, so that "%2F",
// "//" and ".." in keys survive.
func splitPath(p string, req *request) error {
	p = strings.TrimPrefix(p, "/")
	b, k, _ := strings.Cut(p, "/")
	bucket, err := url.PathUnescape(b)
	if err != nil {
		return errInvalidRequest("invalid URI escaping")
	}
	key, err := url.PathUnescape(k)
	if err != nil {
		return errInvalidRequest("invalid URI escaping")
	}
	req.bucket, req.key = bucket, key
	if bucket != "" && !validBucketName(bucket) {
		return errInvalidBucketName(bucket)
	}
	if len(key) > MaxKeyLength {
		return errKeyTooLong()
	}
	if !utf8.ValidString(key) {
		return errInvalidURI()
	}
	if !validKeyChars(key) {
		return errInvalidArgument("Object key contains an unsupported character", "key", "")
	}
	return nil
}

func (q *request) has(name string) bool { _, ok := q.query[name]; return ok }

// route dispatches on method, path shape and sub-resource.
func (h *Handler) route(q *request) error {
	m := q.r.Method
	switch {
	case q.bucket == "":
		if m == http.MethodGet {
			return h.listBuckets(q)
		}
		return errMethodNotAllowed(m, "SERVICE")
	case q.key == "":
		return h.routeBucket(q, m)
	}
	return h.routeObject(q, m)
}

func (h *Handler) routeBucket(q *request, m string) error {
	if q.has("encryption") {
		return h.bucketEncryption(q, m)
	}
	if ok, err := h.routeAbsentConfig(q, m); ok {
		return err
	}
	for _, unsupported := range []string{"acl", "policy", "cors", "lifecycle", "tagging", "website",
		"replication", "logging", "notification", "object-lock", "accelerate",
		"requestPayment", "ownershipControls", "publicAccessBlock", "analytics", "metrics",
		"inventory", "intelligent-tiering", "policyStatus"} {
		if q.has(unsupported) {
			return errNotImplemented("A header or query you provided implies functionality that is not implemented")
		}
	}
	switch m {
	case http.MethodPut:
		if q.has("versioning") {
			return h.putBucketVersioning(q)
		}
		return h.createBucket(q)
	case http.MethodHead:
		return h.headBucket(q)
	case http.MethodDelete:
		return h.deleteBucket(q)
	case http.MethodGet:
		switch {
		case q.has("versioning"):
			return h.getBucketVersioning(q)
		case q.has("versions"):
			return h.listObjectVersions(q)
		case q.has("uploads"):
			return h.listMultipartUploads(q)
		case q.has("location"):
			return h.getBucketLocation(q)
		case q.query.Get("list-type") == "2":
			return h.listObjectsV2(q)
		}
		return h.listObjectsV1(q)
	case http.MethodPost:
		if q.has("delete") {
			return h.deleteObjects(q)
		}
	}
	return errMethodNotAllowed(m, "BUCKET")
}

func (h *Handler) routeObject(q *request, m string) error {
	sse, err := h.checkSSE(q, objectSSEOp(q, m))
	if err != nil {
		return err
	}
	q.sse = sse
	if q.has("tagging") {
		switch m {
		case http.MethodGet:
			return h.getObjectTagging(q)
		case http.MethodPut:
			return h.putObjectTagging(q, false)
		case http.MethodDelete:
			return h.putObjectTagging(q, true)
		}
		return errMethodNotAllowed(m, "OBJECT")
	}
	if q.has("attributes") && m == http.MethodGet {
		return h.getObjectAttributes(q)
	}
	for _, unsupported := range []string{"acl", "retention", "legal-hold", "torrent", "restore", "select", "attributes"} {
		if q.has(unsupported) {
			return errNotImplemented("A header or query you provided implies functionality that is not implemented")
		}
	}
	copySrc := q.r.Header.Get("X-Amz-Copy-Source")
	switch m {
	case http.MethodPut:
		switch {
		case q.has("uploadId") && copySrc != "":
			return h.uploadPartCopy(q)
		case q.has("uploadId"):
			return h.uploadPart(q)
		case copySrc != "":
			return h.copyObject(q)
		}
		return h.putObject(q)
	case http.MethodGet:
		if q.has("uploadId") {
			return h.listParts(q)
		}
		return h.getObject(q, true)
	case http.MethodHead:
		return h.getObject(q, false)
	case http.MethodDelete:
		if q.has("uploadId") {
			return h.abortMultipartUpload(q)
		}
		return h.deleteObject(q)
	case http.MethodPost:
		switch {
		case q.has("uploads"):
			return h.createMultipartUpload(q)
		case q.has("uploadId"):
			return h.completeMultipartUpload(q)
		}
	}
	return errMethodNotAllowed(m, "OBJECT")
}

// writeXML sends a 200 XML response.
func writeXML(w http.ResponseWriter, status int, v any) error {
	out, err := marshalXML(v)
	if err != nil {
		return fmt.Errorf("s3api: encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(xml.Header)+len(out)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(out)
	return nil
}

// marshalXML is xml.Marshal with '"' in text written as AWS writes it,
// "&quot;" (ETags), instead of encoding/xml's "&#34;". The swap is exact:
// encoding/xml writes a literal "&" as "&amp;", so "&#34;" in its output
// can only be its escape of '"'.
func marshalXML(v any) ([]byte, error) {
	out, err := xml.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(out, []byte("&#34;"), []byte("&quot;")), nil
}

// readXML decodes a bounded XML request body into v; anything malformed
// is MalformedXML.
func readXML(q *request, v any) error {
	data, err := readAllLimited(q, maxXMLBody)
	if err != nil {
		return err
	}
	return unmarshalXML(data, v)
}

// readAllLimited reads the whole request body, refusing more than max
// bytes, and checks it against Content-MD5 when the request has one (as S3
// does for every body: a DeleteObjects whose digest is wrong deletes
// nothing).
func readAllLimited(q *request, max int64) ([]byte, error) {
	wantMD5, err := contentMD5(q.r)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(q.body, max+1))
	if err != nil {
		return nil, bodyError(err)
	}
	if int64(len(data)) > max {
		return nil, errMalformedXML()
	}
	if sum := md5.Sum(data); wantMD5 != nil && !bytes.Equal(sum[:], wantMD5) {
		return nil, errBadDigest()
	}
	return data, nil
}

func unmarshalXML(data []byte, v any) error {
	if err := xml.Unmarshal(data, v); err != nil {
		return errMalformedXML()
	}
	return nil
}

// checkedBody returns the request body to ingest, hashing it for its
// x-amz-checksum-* header when the verifier does not (unsigned requests),
// and the checksum to verify once the body is read (nil: none).
func checkedBody(q *request) (io.Reader, *bodyChecksum, error) {
	if q.signed {
		return q.body, nil, nil
	}
	sum, err := requestChecksum(q.r)
	if err != nil || sum == nil {
		return q.body, nil, err
	}
	return io.TeeReader(q.body, sum), sum, nil
}

// bodyError maps a failure reading the request body: the auth seam's coded
// errors pass through, anything else is IncompleteBody.
func bodyError(err error) error {
	var c codedError
	var e *Error
	var se *sigv4.Error
	if errors.As(err, &c) || errors.As(err, &e) || errors.As(err, &se) {
		return err
	}
	return errIncompleteBody()
}

// headerBytes is the size of a header section on the wire: "Name: value"
// and CRLF per field.
func headerBytes(h http.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}
