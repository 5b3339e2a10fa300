package s3api

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api/ssecrypt"
)

// ingested is a request body made durable: inline bytes or a committed
// blob, with its MD5.
type ingested struct {
	inline []byte
	blob   string
	size   int64
	md5    []byte
}

func (in ingested) segments() []segment {
	if in.blob == "" {
		return nil
	}
	return []segment{{Blob: in.blob, Size: in.size}}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// ingest reads exactly size bytes of src. Small bodies (when allowInline)
// stay in memory; larger ones stream to a committed blob, so memory does
// not grow with size. The caller owns the blob: it must be named by a
// committed record or removed.
func (h *Handler) ingest(src io.Reader, size int64, allowInline bool) (ingested, error) {
	return h.ingestSealed(src, size, allowInline, nil)
}

// ingestSealed is ingest that, with seal set, stores the body sealed
// (package ssecrypt): the inline bytes or the blob hold only ciphertext,
// while size and md5 describe the plaintext, as ETags and checksums do.
func (h *Handler) ingestSealed(src io.Reader, size int64, allowInline bool, seal *sealing) (ingested, error) {
	sum := md5.New()
	if allowInline && size <= inlineMax {
		buf := make([]byte, size)
		if _, err := io.ReadFull(src, buf); err != nil {
			return ingested{}, bodyError(err)
		}
		sum.Write(buf)
		if seal != nil {
			sealed, err := seal.k.Seal(buf, seal.bucket, seal.key)
			if err != nil {
				return ingested{}, err
			}
			clear(buf)
			buf = sealed
		}
		return ingested{inline: buf, size: size, md5: sum.Sum(nil)}, nil
	}
	bs, err := h.newBlobSink(seal)
	if err != nil {
		return ingested{}, err
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	n, err := copyCounting(io.MultiWriter(bs.w, sum), io.LimitReader(src, size), *bp)
	if err == nil && n != size {
		err = errIncompleteBody()
	}
	id, err := bs.finish(err)
	if err != nil {
		return ingested{}, err
	}
	return ingested{blob: id, size: size, md5: sum.Sum(nil)}, nil
}

// blobSink is a new blob being written: w writes through the sealing
// writer when the body is sealed, else to the blob itself.
type blobSink struct {
	bw *engine.BlobWriter
	sw *ssecrypt.Writer // nil: not sealed
	w  io.Writer
}

// newBlobSink starts a blob, sealed under seal when it is set.
func (h *Handler) newBlobSink(seal *sealing) (*blobSink, error) {
	bw, err := h.e.NewBlob()
	if err != nil {
		return nil, err
	}
	bs := &blobSink{bw: bw, w: bw}
	if seal != nil {
		if bs.sw, err = seal.k.NewWriter(bw, seal.bucket, seal.key); err != nil {
			_ = bw.Abort()
			return nil, fmt.Errorf("s3api: write blob: %w", err)
		}
		bs.w = bs.sw
	}
	return bs, nil
}

// finish ends the blob: with err (the copy's) set, or when sealing fails
// to close, it aborts the blob and returns the error; else it commits.
func (bs *blobSink) finish(err error) (string, error) {
	if err == nil && bs.sw != nil {
		if err = bs.sw.Close(); err != nil {
			err = fmt.Errorf("s3api: write blob: %w", err)
		}
	}
	if err != nil {
		_ = bs.bw.Abort()
		return "", err
	}
	id, _, err := bs.bw.Commit()
	return id, err
}

// copyCounting copies src to dst, telling a body read failure (the
// client's fault, or the auth seam's verdict) from a write failure (ours).
func copyCounting(dst io.Writer, src io.Reader, buf []byte) (int64, error) {
	var n int64
	for {
		nr, rerr := src.Read(buf)
		if nr > 0 {
			nw, werr := dst.Write(buf[:nr])
			n += int64(nw)
			if werr != nil {
				return n, fmt.Errorf("s3api: write blob: %w", werr)
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, bodyError(rerr)
		}
	}
}

// requireEOF reads a request body past the size ingest took from it. The
// SigV4 layer reports its verdict on a body (a trailing or header
// x-amz-checksum-*, x-amz-content-sha256, the last aws-chunked frame)
// instead of io.EOF (see the sigv4 package doc), and ingest stops after the declared
// size, before that read; without this one a wrong trailing checksum would
// be stored. A body longer than declared is IncompleteBody.
func requireEOF(body io.Reader) error {
	var b [1]byte
	n, err := io.ReadAtLeast(body, b[:], 1)
	switch {
	case n > 0:
		return errIncompleteBody()
	case errors.Is(err, io.EOF):
		return nil
	default:
		return bodyError(err)
	}
}

// ingestChecked is ingest followed by every check of an uploaded body: read
// to EOF for the verifier's verdict, Content-MD5 (wantMD5, if given) and
// the x-amz-checksum-* header (sum, if any). On any failure nothing is
// kept.
func (h *Handler) ingestChecked(body io.Reader, size int64, allowInline bool, wantMD5 []byte, sum *bodyChecksum) (ingested, error) {
	return h.ingestCheckedSealed(body, size, allowInline, wantMD5, sum, nil)
}

// ingestCheckedSealed is ingestChecked storing the body sealed when seal
// is set (ingestSealed); every check is of the plaintext.
func (h *Handler) ingestCheckedSealed(body io.Reader, size int64, allowInline bool, wantMD5 []byte, sum *bodyChecksum, seal *sealing) (ingested, error) {
	in, err := h.ingestSealed(body, size, allowInline, seal)
	if err != nil {
		return ingested{}, err
	}
	if err := requireEOF(body); err != nil {
		h.discard(in)
		return ingested{}, err
	}
	if wantMD5 != nil && !bytes.Equal(wantMD5, in.md5) {
		h.discard(in)
		return ingested{}, errBadDigest()
	}
	if err := sum.verify(); err != nil {
		h.discard(in)
		return ingested{}, err
	}
	return in, nil
}

// discard removes the blob of a body no record will name (a refused or
// losing write). A failure leaves an orphan for the engine's sweep at the
// next Open.
func (h *Handler) discard(in ingested) {
	if in.blob == "" {
		return
	}
	if err := h.e.RemoveBlob(in.blob); err != nil {
		h.log.Warn("s3api: remove blob", "blob", in.blob, "err", err)
	}
}

// declaredSize is the object size the request announces: Content-Length,
// which the SigV4 verifier (or sigv4.Dechunk, for unsigned requests) has
// already replaced by the decoded length of an aws-chunked body
// (see the sigv4 package doc). x-amz-decoded-content-length on a body
// nobody de-chunked means nothing and is not trusted: it must not truncate
// a plain body.
func declaredSize(r *http.Request) (int64, error) {
	if r.ContentLength < 0 {
		return 0, errMissingContentLength()
	}
	return r.ContentLength, nil
}

// bodyHeaders checks what an upload (PutObject, UploadPart) announces of
// its body: the Content-MD5 it must match (nil when absent) and its size
// (declaredSize), at most MaxObjectSize.
func bodyHeaders(r *http.Request) (wantMD5 []byte, size int64, err error) {
	if wantMD5, err = contentMD5(r); err != nil {
		return nil, 0, err
	}
	if size, err = declaredSize(r); err != nil {
		return nil, 0, err
	}
	if size > MaxObjectSize {
		return nil, 0, errEntityTooLarge()
	}
	return wantMD5, size, nil
}

// contentMD5 parses the Content-MD5 header (nil when absent).
func contentMD5(r *http.Request) ([]byte, error) {
	v, ok := r.Header["Content-Md5"]
	if !ok {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v[0]))
	if err != nil || len(b) != md5.Size {
		return nil, errInvalidDigest()
	}
	return b, nil
}

// storedHeaders are the standard headers kept with an object and returned
// by GET/HEAD.
var storedHeaders = []string{"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"}

// objectAttrs reads Content-Type, the stored standard headers and the
// user metadata of a write request, enforcing the metadata size limit.
// Empty metadata values are kept.
func objectAttrs(r *http.Request) (ct string, hdrs, meta map[string]string, err error) {
	ct = r.Header.Get("Content-Type")
	for _, name := range storedHeaders {
		v, ok := r.Header[name]
		if !ok {
			continue
		}
		val := strings.Join(v, ",")
		if name == "Content-Encoding" {
			val = stripAWSChunked(val)
			if val == "" {
				continue
			}
		}
		if hdrs == nil {
			hdrs = map[string]string{}
		}
		hdrs[name] = val
	}
	total := 0
	for k, v := range r.Header {
		lk := strings.ToLower(k)
		name, ok := strings.CutPrefix(lk, "x-amz-meta-")
		if !ok {
			continue
		}
		if meta == nil {
			meta = map[string]string{}
		}
		val := strings.Join(v, ",")
		meta[name] = val
		total += len(name) + len(val)
	}
	if total > MaxUserMetadata {
		return "", nil, nil, errMetadataTooLarge()
	}
	return ct, hdrs, meta, nil
}

// newObjectAttrs is what PutObject and CreateMultipartUpload take from
// the request for the object they create: objectAttrs and the
// x-amz-tagging tags (headerTags).
func newObjectAttrs(r *http.Request) (ct string, hdrs, meta, tags map[string]string, err error) {
	if ct, hdrs, meta, err = objectAttrs(r); err != nil {
		return "", nil, nil, nil, err
	}
	if tags, err = headerTags(r); err != nil {
		return "", nil, nil, nil, err
	}
	return ct, hdrs, meta, tags, nil
}

func stripAWSChunked(v string) string {
	var keep []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p != "" && !strings.EqualFold(p, "aws-chunked") {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ",")
}

// objectReader serves a byte range of a version's body. Every blob is
// opened up front, so a concurrent overwrite that removes them after the
// open cannot cut the response short.
type objectReader struct {
	r     io.Reader
	files []*os.File
	// inline is the range of an inline body (nil otherwise), which a GET
	// writes as it is, without a copy buffer.
	inline []byte
}

func (o *objectReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func (o *objectReader) Close() error {
	for _, f := range o.files {
		f.Close()
	}
	return nil
}

// errBlobGone reports that a blob vanished between the metadata read and
// its open: the version was replaced meanwhile; the caller re-reads.
var errBlobGone = errors.New("s3api: blob removed concurrently")

// openRange opens the byte range rng of version v of bucket/key (data:
// its inline body), decrypting a sealed one; a body sealed under another
// master key, or altered, is refused here, before any byte is served.
func (h *Handler) openRange(bucket, key string, v version, data []byte, rng byteRange) (*objectReader, error) {
	if v.Inline && v.SSE != "" {
		r, err := h.openSealed(bytes.NewReader(data), v.Size, bucket, key, rng.Start, rng.length())
		if err != nil {
			return nil, err
		}
		return &objectReader{r: r}, nil
	}
	if v.Inline {
		b := data[rng.Start : rng.End+1]
		return &objectReader{r: bytes.NewReader(b), inline: b}, nil
	}
	o := &objectReader{}
	var readers []io.Reader
	var off int64
	for _, s := range v.Segments {
		segStart, segEnd := off, off+s.Size-1
		off += s.Size
		if segEnd < rng.Start || segStart > rng.End || s.Size == 0 {
			continue
		}
		f, err := h.e.OpenBlob(s.Blob)
		if err != nil {
			o.Close()
			if errors.Is(err, os.ErrNotExist) {
				return nil, errBlobGone
			}
			return nil, err
		}
		o.files = append(o.files, f)
		from := max(rng.Start, segStart) - segStart
		to := min(rng.End, segEnd) - segStart
		if v.SSE == "" {
			readers = append(readers, io.NewSectionReader(f, from, to-from+1))
			continue
		}
		r, err := h.openSealed(f, s.Size, bucket, key, from, to-from+1)
		if err != nil {
			o.Close()
			return nil, err
		}
		readers = append(readers, r)
	}
	o.r = io.MultiReader(readers...)
	return o, nil
}
