package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	algorithm       = "AWS4-HMAC-SHA256"
	amzDateFormat   = "20060102T150405Z"
	scopeDateFormat = "20060102"
	emptySHA256     = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// URIEncode is AWS's URI encoding: every byte but the unreserved characters
// (A–Z a–z 0–9 - _ . ~) becomes %XX with upper-case hex; '/' is kept when
// keepSlash is set (canonical paths, and S3's encoding-type=url).
func URIEncode(s string, keepSlash bool) string {
	const hexdig = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~', c == '/' && keepSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexdig[c>>4])
			b.WriteByte(hexdig[c&15])
		}
	}
	return b.String()
}

// canonicalURI is the request path, decoded once and AWS-encoded once, as
// S3 signers produce it (no path normalization: "//" and ".." are kept).
func canonicalURI(u *url.URL) string {
	p := u.Path
	if p == "" {
		return "/"
	}
	return URIEncode(p, true)
}

// queryPairs parses a raw query into its name=value pairs, keeping order
// and empty values ("?uploads" is uploads="").
func queryPairs(raw string) [][2]string {
	var out [][2]string
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		out = append(out, [2]string{k, v})
	}
	return out
}

// canonicalQuery encodes the query sorted by name then value, leaving out
// X-Amz-Signature (presigned URLs).
func canonicalQuery(pairs [][2]string) string {
	enc := make([]string, 0, len(pairs))
	for _, p := range pairs {
		if p[0] == "X-Amz-Signature" {
			continue
		}
		enc = append(enc, URIEncode(p[0], false)+"="+URIEncode(p[1], false))
	}
	sort.Strings(enc)
	return strings.Join(enc, "&")
}

// headerValues returns the values of one signed header as the client saw
// them, restoring those net/http moves out of r.Header.
func headerValues(r *http.Request, name string) []string {
	switch name {
	case "host":
		return []string{r.Host}
	case "content-length":
		if v := r.Header.Values("Content-Length"); len(v) > 0 {
			return v
		}
		if r.ContentLength >= 0 {
			return []string{strconv.FormatInt(r.ContentLength, 10)}
		}
		return nil
	case "transfer-encoding":
		if v := r.Header.Values("Transfer-Encoding"); len(v) > 0 {
			return v
		}
		return r.TransferEncoding
	}
	return r.Header.Values(name)
}

// canonicalHeaderValue trims a value and collapses runs of spaces.
func canonicalHeaderValue(v string) string {
	v = strings.TrimSpace(v)
	if !strings.Contains(v, "  ") {
		return v
	}
	return strings.Join(strings.Fields(v), " ")
}

// canonicalRequest builds the canonical request of SigV4.
func canonicalRequest(r *http.Request, query [][2]string, signed []string, payloadHash string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(canonicalURI(r.URL))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(query))
	b.WriteByte('\n')
	for _, h := range signed {
		vals := headerValues(r, h)
		cv := make([]string, len(vals))
		for i, v := range vals {
			cv[i] = canonicalHeaderValue(v)
		}
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(strings.Join(cv, ","))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// scope is one credential scope: date/region/service/aws4_request.
type scope struct {
	date, region, service string
}

func (s scope) String() string {
	return s.date + "/" + s.region + "/" + s.service + "/aws4_request"
}

// signingKey derives the SigV4 signing key of secret for the scope.
func signingKey(secret string, s scope) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), s.date)
	k = hmacSHA256(k, s.region)
	k = hmacSHA256(k, s.service)
	return hmacSHA256(k, "aws4_request")
}

// keyCache remembers derived signing keys (four HMACs each) per secret and
// scope, as the SDKs do: a scope names one day, so a client's key changes
// daily. It holds at most maxCachedKeys entries (it starts over when
// full); a cached key is never modified.
type keyCache struct {
	mu sync.Mutex
	m  map[cachedKeyID][]byte
}

type cachedKeyID struct {
	secret string
	scope  scope
}

const maxCachedKeys = 64

// get returns signingKey(secret, s), derived once.
func (c *keyCache) get(secret string, s scope) []byte {
	id := cachedKeyID{secret, s}
	c.mu.Lock()
	key, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return key
	}
	key = signingKey(secret, s)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedKeys {
		c.m = make(map[cachedKeyID][]byte)
	}
	c.m[id] = key
	c.mu.Unlock()
	return key
}

func stringToSign(t time.Time, s scope, canonical string) string {
	return algorithm + "\n" + t.UTC().Format(amzDateFormat) + "\n" + s.String() + "\n" + sha256Hex(canonical)
}

func signHex(key []byte, sts string) string {
	return hex.EncodeToString(hmacSHA256(key, sts))
}
