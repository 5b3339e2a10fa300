package s3store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// client is the part of the S3 REST API the store uses (GetObject,
// HeadObject, PutObject, DeleteObject, ListObjectsV2, CreateBucket) over
// net/http, each request signed with Signature Version 4 by
// aws-sdk-go-v2's signer. The SDK's generated S3 client added 7 MB to
// every binary that links the store, for these six calls.
type client struct {
	http      aws.HTTPClient
	creds     aws.CredentialsProvider // nil: unsigned requests
	signer    *v4.Signer
	region    string
	base      *url.URL // scheme and host (and a path prefix) of the endpoint
	pathStyle bool     // bucket in the path, not in the host
	bucket    string
}

// Limits of one request's bookkeeping.
const (
	// readAttempts bounds the sends of one read (GET, HEAD, list): a read
	// that fails transiently (5xx, 429, a transport error) is sent again,
	// as the SDK's standard retryer did. Writes are sent once; the store
	// resolves their unknown outcomes itself.
	readAttempts = 3
	// maxErrorBody caps the bytes of an error response that are parsed.
	maxErrorBody = 64 << 10
	// maxListBody caps a ListObjectsV2 answer (1000 keys of 1024 bytes
	// with their ETags fit well within).
	maxListBody = 8 << 20
	// emptySHA256 is the SHA-256 of no bytes, the payload hash of a
	// request without a body.
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// reads sends a read again after a transient failure (at most
// readAttempts sends, jittered backoff from 100ms to 2s between them,
// never past ctx).
var reads = resolve.ReadRetry{
	Attempts:  readAttempts,
	Backoff:   backoff.Policy{Base: 100 * time.Millisecond, Max: 2 * time.Second},
	Retryable: func(err error) bool { return classify(resolve.OpRead, err).Kind == store.ErrTransient },
}

// newClient returns a client of bucket at endpoint (path-style), or at
// AWS's regional endpoint (virtual-hosted when the bucket name allows).
func newClient(hc aws.HTTPClient, creds aws.CredentialsProvider, region, endpoint, bucket string) (*client, error) {
	c := &client{http: hc, creds: creds, region: region, bucket: bucket,
		// S3 signs the path as sent, without escaping it a second time.
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("endpoint %q is not an http:// or https:// URL", endpoint)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath, u.RawQuery, u.Fragment = "", "", ""
		c.base, c.pathStyle = u, true
		return c, nil
	}
	host := "s3." + region + ".amazonaws.com"
	if strings.HasPrefix(region, "cn-") {
		host += ".cn"
	}
	c.base = &url.URL{Scheme: "https", Host: host}
	c.pathStyle = !virtualHostable.MatchString(bucket)
	if !c.pathStyle {
		c.base.Host = bucket + "." + host
	}
	return c, nil
}

// virtualHostable matches the bucket names that can be a host label of
// an HTTPS virtual-hosted URL (no dots: the wildcard certificate covers
// one label).
var virtualHostable = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

// request is one S3 call.
type request struct {
	op     string // the S3 operation, for errors: "GetObject", …
	method string
	object string // the object's full name; "" addresses the bucket
	query  url.Values
	header http.Header
	body   io.ReadSeeker // read from its start; nil sends no body
}

// responseError is an S3 answer other than 2xx: its status and, when the
// body is S3's XML error document, the error code and message.
type responseError struct {
	Op      string
	Status  int
	Code    string
	Message string
}

func (e *responseError) Error() string {
	s := fmt.Sprintf("%s: status %d", e.Op, e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// url returns the URL of an object (or of the bucket when object is "").
func (c *client) url(object string, q url.Values) *url.URL {
	u := *c.base
	p := u.Path
	if c.pathStyle {
		p += "/" + c.bucket
	}
	if object != "" || !c.pathStyle {
		p += "/" + object
	}
	u.Path, u.RawPath = p, escapePath(p)
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	return &u
}

// escapePath escapes every byte of p but the unreserved characters of
// RFC 3986 and '/', as SigV4's canonical URI wants it.
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		ch := p[i]
		if 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z' || '0' <= ch && ch <= '9' || strings.IndexByte("-._~/", ch) >= 0 {
			b.WriteByte(ch)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", ch)
	}
	return b.String()
}

// send signs and sends r once. It returns the response of a 2xx answer
// (the caller closes its body), a *responseError for any other status,
// or the transport's error.
func (c *client) send(ctx context.Context, r request) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, r.method, "", nil)
	if err != nil {
		return nil, err
	}
	req.URL = c.url(r.object, r.query)
	req.Host = req.URL.Host
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "latchkey-s3store")
	// The bytes as stored: no transparent gunzip of an object that was
	// written with Content-Encoding: gzip (as the SDK asks).
	req.Header.Set("Accept-Encoding", "identity")
	hash := emptySHA256
	if r.body != nil {
		h := sha256.New()
		n, err := io.Copy(h, r.body)
		if err != nil {
			return nil, fmt.Errorf("%s: read body: %w", r.op, err)
		}
		if _, err := r.body.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: rewind body: %w", r.op, err)
		}
		hash = hex.EncodeToString(h.Sum(nil))
		req.ContentLength = n
		if n > 0 {
			req.Body = io.NopCloser(r.body)
		} else {
			req.Body = http.NoBody
		}
	}
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if c.creds != nil {
		creds, err := c.creds.Retrieve(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: credentials: %w", r.op, err)
		}
		if err := c.signer.SignHTTP(ctx, creds, req, hash, "s3", c.region, time.Now()); err != nil {
			return nil, fmt.Errorf("%s: sign: %w", r.op, err)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	e := &responseError{Op: r.op, Status: resp.StatusCode}
	var doc struct {
		Code    string
		Message string
	}
	if b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)); err == nil && xml.Unmarshal(b, &doc) == nil {
		e.Code, e.Message = doc.Code, doc.Message
	}
	return nil, e
}

// read sends a read, again after a transient failure (reads).
func (c *client) read(ctx context.Context, r request) (resp *http.Response, err error) {
	err = reads.Do(ctx, func() error { resp, err = c.send(ctx, r); return err })
	return resp, err
}

// object is what GetObject and HeadObject answer.
type object struct {
	body  io.ReadCloser // nil for HeadObject
	etag  string
	nonce string // the metadata nonce (x-amz-meta-latchkey-nonce)
}

func objectOf(resp *http.Response) object {
	return object{body: resp.Body, etag: resp.Header.Get("ETag"), nonce: resp.Header.Get("X-Amz-Meta-" + metaNonce)}
}

// getObject reads an object; rangeHeader, when set, is the Range header.
func (c *client) getObject(ctx context.Context, name, rangeHeader string) (object, error) {
	r := request{op: "GetObject", method: http.MethodGet, object: name}
	if rangeHeader != "" {
		r.header = http.Header{"Range": {rangeHeader}}
	}
	resp, err := c.read(ctx, r)
	if err != nil {
		return object{}, err
	}
	return objectOf(resp), nil
}

// headObject reads an object's ETag and nonce.
func (c *client) headObject(ctx context.Context, name string) (object, error) {
	resp, err := c.read(ctx, request{op: "HeadObject", method: http.MethodHead, object: name})
	if err != nil {
		return object{}, err
	}
	resp.Body.Close()
	o := objectOf(resp)
	o.body = nil
	return o, nil
}

// putObject writes body (read from its start) under name with the nonce
// as metadata and the conditional header h (If-Match or If-None-Match),
// once, and returns the new ETag.
func (c *client) putObject(ctx context.Context, name, nonce string, h http.Header, body io.ReadSeeker) (string, error) {
	hdr := h.Clone()
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("X-Amz-Meta-"+metaNonce, nonce)
	resp, err := c.send(ctx, request{op: "PutObject", method: http.MethodPut, object: name, header: hdr, body: body})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	return resp.Header.Get("ETag"), nil
}

// deleteObject deletes name, with the conditional header h, once.
func (c *client) deleteObject(ctx context.Context, name string, h http.Header) error {
	resp, err := c.send(ctx, request{op: "DeleteObject", method: http.MethodDelete, object: name, header: h})
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// listing is one page of ListObjectsV2.
type listing struct {
	IsTruncated bool
	Contents    []struct {
		Key  string
		ETag string
	}
}

// listObjects lists up to maxKeys names under prefix after startAfter.
func (c *client) listObjects(ctx context.Context, prefix, startAfter string, maxKeys int) (listing, error) {
	q := url.Values{"list-type": {"2"}, "prefix": {prefix}, "max-keys": {fmt.Sprint(maxKeys)}}
	if startAfter != "" {
		q.Set("start-after", startAfter)
	}
	var l listing
	resp, err := c.read(ctx, request{op: "ListObjectsV2", method: http.MethodGet, query: q})
	if err != nil {
		return l, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxListBody+1))
	if err != nil {
		return l, err
	}
	if len(b) > maxListBody {
		return l, fmt.Errorf("ListObjectsV2: answer over %d bytes", maxListBody)
	}
	if err := xml.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("ListObjectsV2: %w", err)
	}
	return l, nil
}

// createBucket creates the bucket, in the client's region.
func (c *client) createBucket(ctx context.Context) error {
	r := request{op: "CreateBucket", method: http.MethodPut}
	if c.region != "us-east-1" {
		var cfg struct {
			XMLName            xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CreateBucketConfiguration"`
			LocationConstraint string
		}
		cfg.LocationConstraint = c.region
		b, err := xml.Marshal(cfg)
		if err != nil {
			return err
		}
		r.body = strings.NewReader(string(b))
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// errorOf returns the status and code of an S3 error answer, zero for
// any other error.
func errorOf(err error) (status int, code string) {
	var re *responseError
	if errors.As(err, &re) {
		return re.Status, re.Code
	}
	return 0, ""
}
