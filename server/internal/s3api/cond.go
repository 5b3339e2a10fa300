package s3api

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// This file holds the conditional-request decisions (the tables of
// docs/wire-s3.md, "Conditional requests") as pure functions: header parsing and validation happen before any
// state is read; evaluation happens inside the engine transaction that
// publishes the write, against the key's state at commit.

// writeCond is a validated PutObject / CompleteMultipartUpload / CopyObject
// destination precondition. The zero value is "unconditional".
type writeCond struct {
	IfMatch     string // raw header value; "" when absent
	IfNoneMatch bool   // If-None-Match: *
}

func (c writeCond) conditional() bool { return c.IfMatch != "" || c.IfNoneMatch }

// condValue reads a conditional header, falling back to the query parameter
// of the same name (the signed query parameters of a presigned URL); query
// is the request's, parsed once.
func condValue(r *http.Request, query url.Values, name string) (string, bool) {
	if vs, ok := r.Header[http.CanonicalHeaderKey(name)]; ok && len(vs) > 0 {
		return vs[0], true
	}
	for k, vs := range query {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0], true
		}
	}
	return "", false
}

// parseWriteCond validates the write precondition headers: the 501 forms
// come first in AWS's evaluation order.
func parseWriteCond(r *http.Request, query url.Values) (writeCond, *Error) {
	im, hasIM := condValue(r, query, "If-Match")
	inm, hasINM := condValue(r, query, "If-None-Match")
	return decideWriteHeaders(im, hasIM, inm, hasINM)
}

func decideWriteHeaders(im string, hasIM bool, inm string, hasINM bool) (writeCond, *Error) {
	switch {
	case hasIM && hasINM:
		return writeCond{}, errNotImplementedHeader("If-Match,If-None-Match",
			"Multiple conditional request headers present in the request")
	case hasINM && strings.TrimSpace(inm) != "*":
		return writeCond{}, errNotImplementedHeader("If-None-Match",
			"We don't accept the provided value of If-None-Match header for this API")
	case hasIM && strings.TrimSpace(im) == "*":
		return writeCond{}, errNotImplementedHeader("If-Match",
			"We don't accept the provided value of If-Match header for this API")
	case hasINM:
		return writeCond{IfNoneMatch: true}, nil
	case hasIM:
		if im == "" {
			// A present but empty If-Match can match nothing; keep it
			// distinguishable from "absent".
			im = `""`
		}
		return writeCond{IfMatch: im}, nil
	}
	return writeCond{}, nil
}

// check evaluates c against the key's state at commit. snapshot, when not
// nil, is the key's Mod at CreateMultipartUpload: a mutation since then
// turns a passing precondition into 409 ConditionalRequestConflict.
// Order, as AWS answers: 404 on If-Match without a current object, 412, 409.
func (c writeCond) check(key string, cur current, snapshot *uint64) *Error {
	if c.IfMatch != "" {
		if !cur.Exists {
			return errNoSuchKey(key)
		}
		if !etagListMatches(c.IfMatch, cur.ETag) {
			return errPrecondition("If-Match")
		}
	}
	if c.IfNoneMatch && cur.Exists {
		return errPrecondition("If-None-Match")
	}
	if c.conditional() && snapshot != nil && cur.Mod != *snapshot {
		cond := "If-Match"
		if c.IfNoneMatch {
			cond = "If-None-Match"
		}
		return errConflict(cond, key)
	}
	return nil
}

// unquote strips surrounding whitespace, a weak prefix and quotes.
func unquote(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return strings.Trim(s, `"`)
}

// etagListMatches reports whether the header value (one ETag, quoted or
// not, or a comma-separated list, or *) matches etag.
func etagListMatches(header, etag string) bool {
	want := unquote(etag)
	for more := true; more; {
		var part string
		part, header, more = strings.Cut(header, ",")
		if p := unquote(part); p == "*" || p == want {
			return true
		}
	}
	return false
}

// deleteCond is a validated DeleteObject precondition.
type deleteCond struct {
	IfMatch string // "" when absent; may be "*"
}

// parseDeleteCond applies the DeleteObject 501 rules (docs/wire-s3.md, "Deletes").
func parseDeleteCond(r *http.Request, query url.Values, versionID string) (deleteCond, *Error) {
	_, hasSize := r.Header["X-Amz-If-Match-Size"]
	_, hasTime := r.Header["X-Amz-If-Match-Last-Modified-Time"]
	im, hasIM := condValue(r, query, "If-Match")
	return decideDeleteHeaders(hasSize, hasTime, im, hasIM, versionID)
}

func decideDeleteHeaders(hasSize, hasTime bool, im string, hasIM bool, versionID string) (deleteCond, *Error) {
	switch {
	case hasTime:
		return deleteCond{}, errNotImplementedHeader("x-amz-if-match-last-modified-time", "")
	case hasSize:
		return deleteCond{}, errNotImplementedHeader("x-amz-if-match-size", "")
	case hasIM && versionID != "":
		return deleteCond{}, errNotImplementedHeader("If-Match", "")
	case hasIM && im == "":
		return deleteCond{IfMatch: `""`}, nil
	}
	return deleteCond{IfMatch: im}, nil
}

// check evaluates a conditional delete against the current version only.
func (c deleteCond) check(key string, cur current) *Error {
	if c.IfMatch == "" {
		return nil
	}
	if !cur.Exists {
		return errNoSuchKey(key)
	}
	if !etagListMatches(c.IfMatch, cur.ETag) {
		return errPrecondition("If-Match")
	}
	return nil
}

// readCond holds the GET/HEAD (or copy-source) validators.
type readCond struct {
	IfMatch, IfNoneMatch               string
	HasIfMatch, HasIfNoneMatch         bool
	IfModifiedSince, IfUnmodifiedSince time.Time // zero when absent or unparsable
}

func parseReadCond(r *http.Request, prefix string) readCond {
	var c readCond
	c.IfMatch, c.HasIfMatch = headerValue(r, prefix+"If-Match")
	c.IfNoneMatch, c.HasIfNoneMatch = headerValue(r, prefix+"If-None-Match")
	c.IfModifiedSince = parseHTTPTime(r.Header.Get(prefix + "If-Modified-Since"))
	c.IfUnmodifiedSince = parseHTTPTime(r.Header.Get(prefix + "If-Unmodified-Since"))
	return c
}

func headerValue(r *http.Request, name string) (string, bool) {
	vs, ok := r.Header[http.CanonicalHeaderKey(name)]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

func parseHTTPTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := http.ParseTime(s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// failed applies the conditional-read ladder (docs/wire-s3.md), If-Match,
// If-Unmodified-Since, If-None-Match, If-Modified-Since, and names the
// first header that fails, or "". Last-Modified is compared at one-second
// resolution, as HTTP dates are.
func (c readCond) failed(etag string, lastMod, now time.Time) string {
	lm := lastMod.Truncate(time.Second)
	if c.HasIfMatch && !etagListMatches(c.IfMatch, etag) {
		return "If-Match"
	}
	if !c.HasIfMatch && !c.IfUnmodifiedSince.IsZero() && lm.After(c.IfUnmodifiedSince) {
		return "If-Unmodified-Since"
	}
	if c.HasIfNoneMatch {
		if etagListMatches(c.IfNoneMatch, etag) {
			return "If-None-Match"
		}
		return ""
	}
	if ims := c.IfModifiedSince; !ims.IsZero() && !ims.After(now) && !lm.After(ims) {
		return "If-Modified-Since"
	}
	return ""
}

// checkRead applies the ladder to a GET/HEAD: If-Match and
// If-Unmodified-Since fail with 412, If-None-Match and If-Modified-Since
// with a 304 that carries the ETag and Last-Modified headers.
func (c readCond) checkRead(etag string, lastMod, now time.Time) *Error {
	switch h := c.failed(etag, lastMod, now); h {
	case "":
		return nil
	case "If-Match", "If-Unmodified-Since":
		return errPrecondition(h)
	default:
		e := newErr(http.StatusNotModified, "NotModified", "Not Modified")
		e.withHeader("ETag", etag)
		e.withHeader("Last-Modified", lastMod.UTC().Format(http.TimeFormat))
		return e
	}
}

// checkCopySource applies the ladder to the x-amz-copy-source-if-*
// headers: every failure is a 412 whose Condition names the copy-source
// header.
func (c readCond) checkCopySource(etag string, lastMod, now time.Time) *Error {
	if h := c.failed(etag, lastMod, now); h != "" {
		return errPrecondition("x-amz-copy-source-" + h)
	}
	return nil
}
