package sigv4

import (
	"crypto/hmac"
	"encoding/hex"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Payload hash values of x-amz-content-sha256 other than a hex SHA-256.
const (
	UnsignedPayload          = "UNSIGNED-PAYLOAD"
	StreamingSigned          = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	StreamingSignedTrailer   = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	StreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
)

// Limits.
const (
	// DefaultMaxSkew is how far a request's time may be from the server's.
	DefaultMaxSkew = 15 * time.Minute
	// MaxPresignExpiry is the longest X-Amz-Expires SigV4 allows (7 days).
	MaxPresignExpiry = 7 * 24 * time.Hour
	// DefaultMaxChunkSize bounds one aws-chunked chunk. Chunks are streamed,
	// not buffered; the bound only rejects absurd declarations.
	DefaultMaxChunkSize = 64 << 20
	maxAuthHeaderLen    = 8 << 10
	maxSignedHeaders    = 64
)

// SecretLookup returns the secret key of an access key, and false when the
// access key is unknown.
type SecretLookup func(accessKey string) (secret string, ok bool)

// Credentials maps access keys to secret keys.
type Credentials map[string]string

// Lookup is a SecretLookup over c.
func (c Credentials) Lookup(accessKey string) (string, bool) {
	s, ok := c[accessKey]
	return s, ok
}

// Options tune a Verifier. The zero value (or nil) accepts any region,
// service "s3", a 15-minute clock skew and the wall clock.
type Options struct {
	// Region, when set, is the only region accepted in the credential
	// scope; when empty any region is accepted (like most S3-compatible
	// servers, so clients configured for "us-east-1" or "auto" both work).
	Region string
	// Service is the service of the credential scope; "" means "s3".
	Service string
	// MaxSkew is the largest accepted difference between the request's
	// time and Now; 0 means DefaultMaxSkew.
	MaxSkew time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxChunkSize bounds one aws-chunked chunk; 0 means
	// DefaultMaxChunkSize.
	MaxChunkSize int64
}

// Verifier checks SigV4 signatures. It is safe for concurrent use.
type Verifier struct {
	lookup   SecretLookup
	region   string
	service  string
	skew     time.Duration
	now      func() time.Time
	maxChunk int64
	keys     keyCache
}

// New returns a Verifier that finds secrets with lookup.
func New(lookup SecretLookup, opts *Options) *Verifier {
	var o Options
	if opts != nil {
		o = *opts
	}
	v := &Verifier{lookup: lookup, region: o.Region, service: o.Service,
		skew: o.MaxSkew, now: o.Now, maxChunk: o.MaxChunkSize}
	if v.service == "" {
		v.service = "s3"
	}
	if v.skew <= 0 {
		v.skew = DefaultMaxSkew
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.maxChunk <= 0 {
		v.maxChunk = DefaultMaxChunkSize
	}
	return v
}

// Signed reports whether r carries any SigV4 (or other AWS) authentication:
// an Authorization header or presigned query parameters. A handler that
// serves anonymous requests checks it before calling Verify.
func Signed(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return true
	}
	if r.URL.RawQuery == "" {
		return false // the common case: parse no query
	}
	q := r.URL.Query()
	return q.Has("X-Amz-Algorithm") || q.Has("X-Amz-Signature") || q.Has("X-Amz-Credential") ||
		q.Has("Signature") || q.Has("AWSAccessKeyId")
}

// authInfo is what the Authorization header or the presigned query says.
type authInfo struct {
	accessKey string
	scope     scope
	signed    []string
	signature string
	time      time.Time
	presigned bool
	expires   time.Duration
}

// Verify checks r's signature and returns the access key that signed it
// and the body to read instead of r.Body. The returned body verifies the
// payload while it is read (see the package doc) and closes r.Body when
// closed.
//
// On success Verify also normalizes r for the handler: for aws-chunked
// payloads r.ContentLength becomes the decoded length
// (x-amz-decoded-content-length) and "aws-chunked" is removed from
// Content-Encoding; for presigned URLs, signed If-None-Match and If-Match
// query parameters are copied into r.Header, replacing an unsigned header
// of the same name. Every signed header is rebound to the value the
// signature covers (its canonical form, see bindSignedHeaders).
//
// Errors are *Error: AccessDenied (no authentication, expired presigned
// URL, x-amz-* headers present but not signed: ErrHeadersNotSigned),
// InvalidAccessKeyId, SignatureDoesNotMatch, RequestTimeTooSkewed,
// AuthorizationHeaderMalformed, AuthorizationQueryParametersError,
// InvalidRequest / InvalidArgument (bad x-amz-content-sha256).
func (v *Verifier) Verify(r *http.Request) (accessKey string, body io.ReadCloser, err error) {
	query := queryPairs(r.URL.RawQuery)
	hasHeader := r.Header.Get("Authorization") != ""
	hasQuery := queryHas(query, "X-Amz-Algorithm") || queryHas(query, "X-Amz-Signature")
	var ai authInfo
	switch {
	case hasHeader && hasQuery:
		return "", nil, &Error{Code: "InvalidArgument", Status: http.StatusBadRequest, Message: "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the Authorization header should be specified"}
	case hasHeader:
		ai, err = parseAuthHeader(r)
	case hasQuery:
		ai, err = parsePresigned(query)
	default:
		if queryHas(query, "AWSAccessKeyId") || queryHas(query, "Signature") {
			return "", nil, ErrUnsupportedSignature
		}
		return "", nil, ErrAccessDenied
	}
	if err != nil {
		return "", nil, err
	}
	if err := v.checkScope(ai); err != nil {
		return "", nil, err
	}
	secret, ok := v.lookup(ai.accessKey)
	if !ok {
		return "", nil, ErrInvalidAccessKeyID
	}
	if err := v.checkTime(ai); err != nil {
		return "", nil, err
	}
	payload, err := payloadHash(r, query, ai.presigned)
	if err != nil {
		return "", nil, err
	}
	key := v.keys.get(secret, ai.scope)
	canonical := canonicalRequest(r, query, ai.signed, payload)
	want := signHex(key, stringToSign(ai.time, ai.scope, canonical))
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(ai.signature))) {
		return "", nil, ErrSignatureDoesNotMatch
	}
	if names := unsignedHeaders(r, ai.signed); len(names) > 0 {
		return "", nil, headersNotSigned(names)
	}
	bindSignedHeaders(r, ai.signed)
	body, err = v.payloadReader(r, payload, key, ai, want)
	if err != nil {
		return "", nil, err
	}
	if ai.presigned {
		promoteConditions(r, query, ai.signed)
	}
	return ai.accessKey, body, nil
}

func queryHas(q [][2]string, name string) bool {
	_, ok := queryGet(q, name)
	return ok
}

func queryGet(q [][2]string, name string) (string, bool) {
	for _, p := range q {
		if p[0] == name {
			return p[1], true
		}
	}
	return "", false
}

// promoteConditions makes the signed conditional query parameters of a
// presigned URL visible as headers. A signed query condition replaces an
// unsigned header of the same name (otherwise "If-Match: <current ETag>"
// added to a URL signed with a stale If-Match would turn the signer's
// compare-and-swap into an unconditional overwrite); a signed header of
// that name is kept.
func promoteConditions(r *http.Request, q [][2]string, signed []string) {
	for _, p := range q {
		for _, h := range []string{"If-None-Match", "If-Match"} {
			if !strings.EqualFold(p[0], h) {
				continue
			}
			if _, isSigned := slices.BinarySearch(signed, strings.ToLower(h)); !isSigned || r.Header.Get(h) == "" {
				r.Header.Set(h, p[1])
			}
		}
	}
}

func (v *Verifier) checkScope(ai authInfo) error {
	malformed := ErrAuthorizationHeaderMalformed
	if ai.presigned {
		malformed = ErrAuthorizationQueryParametersError
	}
	if ai.scope.service != v.service {
		return newErr(malformed, "the credential scope names service %q; expecting %q", ai.scope.service, v.service)
	}
	if v.region != "" && ai.scope.region != v.region {
		return newErr(malformed, "the region %q is wrong; expecting %q", ai.scope.region, v.region)
	}
	if ai.scope.date != ai.time.UTC().Format(scopeDateFormat) {
		return newErr(malformed, "the credential scope date %q does not match the request date %q", ai.scope.date, ai.time.UTC().Format(amzDateFormat))
	}
	return nil
}

func (v *Verifier) checkTime(ai authInfo) error {
	now := v.now()
	if ai.presigned {
		if now.Add(v.skew).Before(ai.time) {
			return newErr(ErrAccessDenied, "Request is not valid yet")
		}
		if now.After(ai.time.Add(ai.expires)) {
			return ErrExpiredPresign
		}
		return nil
	}
	d := now.Sub(ai.time)
	if d < 0 {
		d = -d
	}
	if d > v.skew {
		return ErrRequestTimeTooSkewed
	}
	return nil
}

// payloadHash is the last line of the canonical request.
func payloadHash(r *http.Request, q [][2]string, presigned bool) (string, error) {
	h := r.Header.Get("X-Amz-Content-Sha256")
	if presigned {
		if qh, ok := queryGet(q, "X-Amz-Content-Sha256"); ok {
			h = qh
		}
		if h == "" {
			return UnsignedPayload, nil
		}
	}
	switch h {
	case "":
		return "", ErrMissingContentSHA256
	case UnsignedPayload, StreamingSigned, StreamingSignedTrailer, StreamingUnsignedTrailer:
		return h, nil
	}
	if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
		return "", ErrInvalidContentSHA256
	}
	return strings.ToLower(h), nil
}

// payloadReader wraps r.Body according to the payload mode.
func (v *Verifier) payloadReader(r *http.Request, payload string, key []byte, ai authInfo, seed string) (io.ReadCloser, error) {
	src := r.Body
	if src == nil {
		src = http.NoBody
	}
	switch payload {
	case StreamingSigned, StreamingSignedTrailer, StreamingUnsignedTrailer:
	default:
		sums, err := headerChecksums(r)
		if err != nil {
			return nil, err
		}
		var want []byte
		if payload != UnsignedPayload {
			want, _ = hex.DecodeString(payload)
		}
		return newHashReader(src, want, sums), nil
	}
	cr, err := newChunkedReader(r, src, payload, v.maxChunk)
	if err != nil {
		return nil, err
	}
	cr.key, cr.time, cr.scope, cr.prevSig = key, ai.time, ai.scope, seed
	return cr, nil
}

// newChunkedReader prepares the aws-chunked decoder of r's body in the
// given streaming mode (signing state is the caller's to fill in): the
// trailers x-amz-trailer declares and any x-amz-checksum-* header of a PUT
// (both describe the decoded body) are verified at its end. It also
// normalizes r: ContentLength becomes x-amz-decoded-content-length and
// "aws-chunked" leaves Content-Encoding.
func newChunkedReader(r *http.Request, src io.ReadCloser, payload string, maxChunk int64) (*chunkedReader, error) {
	dl := r.Header.Get("X-Amz-Decoded-Content-Length")
	if dl == "" {
		return nil, ErrMissingDecodedLength
	}
	n, err := strconv.ParseInt(dl, 10, 64)
	if err != nil || n < 0 {
		return nil, newErr(ErrMissingDecodedLength, "invalid x-amz-decoded-content-length %q", dl)
	}
	hsums, err := headerChecksums(r)
	if err != nil {
		return nil, err
	}
	cr := &chunkedReader{
		hsums:    hsums,
		src:      src,
		decoded:  n,
		maxChunk: maxChunk,
		signed:   payload != StreamingUnsignedTrailer,
		trailer:  payload != StreamingSigned,
	}
	if cr.trailer {
		sums, err := trailerChecksums(r.Header.Values("X-Amz-Trailer"))
		if err != nil {
			return nil, err
		}
		cr.sums = sums
	}
	cr.init()
	r.ContentLength = n
	stripAWSChunked(r)
	return cr, nil
}

// stripAWSChunked removes "aws-chunked" from Content-Encoding, as S3 does
// before it stores the header.
func stripAWSChunked(r *http.Request) {
	vals := r.Header.Values("Content-Encoding")
	if len(vals) == 0 {
		return
	}
	var keep []string
	for _, v := range vals {
		for _, e := range strings.Split(v, ",") {
			e = strings.TrimSpace(e)
			if e != "" && !strings.EqualFold(e, "aws-chunked") {
				keep = append(keep, e)
			}
		}
	}
	if len(keep) == 0 {
		r.Header.Del("Content-Encoding")
		return
	}
	r.Header.Set("Content-Encoding", strings.Join(keep, ","))
}
