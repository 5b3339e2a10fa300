package gcsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// This file is the GCS JSON API as the store uses it: five calls over
// net/http (objects get with alt=media or metadata, multipart insert,
// delete, list), their URLs, and the error body. Nothing here retries a
// write; reads retry through reads.

// Limits on what the store reads from a response other than an object's
// value.
const (
	maxMetaBody  = 1 << 20  // one object's metadata, an upload's answer
	maxListBody  = 16 << 20 // one list page of at most maxListPage names
	maxErrorBody = 64 << 10 // an error answer, kept for its reason
)

// reads sends one read (get, metadata, one list page) up to 4 times, with
// the official client's backoff between attempts (1 s doubling to 30 s,
// full jitter), while it fails with 408, 429, 5xx or a transport error
// (retryable) and ctx is not done: the official client's rule. The last
// failure is then ErrTransient.
var reads = resolve.ReadRetry{
	Attempts:  4,
	Backoff:   backoff.Policy{Base: time.Second, Max: 30 * time.Second},
	Retryable: retryable,
}

// apiError is a non-2xx answer: its status and the first reason of the
// JSON error body ({"error":{"code":412,"errors":[{"reason":
// "conditionNotMet"}]}}), when it has one.
type apiError struct {
	Code    int
	Reason  string
	Message string
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("gcs: status %d", e.Code)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg
}

// newAPIError reads (a bounded part of) a failed response's body.
func newAPIError(resp *http.Response) *apiError {
	e := &apiError{Code: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Error struct {
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && (body.Error.Message != "" || len(body.Error.Errors) > 0) {
		e.Message = body.Error.Message
		if len(body.Error.Errors) > 0 {
			e.Reason = body.Error.Errors[0].Reason
		}
	} else {
		e.Message = strings.TrimSpace(string(b[:min(len(b), 200)]))
	}
	return e
}

// escape percent-encodes everything but RFC 3986's unreserved characters,
// as the JSON API wants a bucket or object name in a path segment ('/'
// included).
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// objectURL is the JSON API URL of key's object, with query q.
func (s *Store) objectURL(key string, q url.Values) string {
	u := s.api + "b/" + escape(s.name) + "/o/" + escape(s.prefix+key)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// send sends one request and returns a 2xx response with its body open;
// any other status is an *apiError (body read and closed).
func (s *Store) send(ctx context.Context, method, u string, body io.Reader, length int64, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = length
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("User-Agent", "latchkey-gcsstore")
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, newAPIError(resp)
	}
	return resp, nil
}

// getJSON GETs u (once) and decodes at most limit bytes of its JSON body
// into v.
func (s *Store) getJSON(ctx context.Context, u string, limit int64, v any) error {
	resp, err := s.send(ctx, http.MethodGet, u, nil, 0, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeJSON(resp.Body, limit, v)
}

// decodeJSON decodes at most limit bytes of r into v.
func decodeJSON(r io.Reader, limit int64, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	if int64(len(b)) > limit {
		return &badAnswer{fmt.Sprintf("answer longer than %d bytes", limit)}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &badAnswer{"answer is not the JSON expected: " + err.Error()}
	}
	return nil
}

// badAnswer is a 2xx answer the store cannot use: too long, not the JSON
// expected, without a generation, or bytes that fail their CRC32C. It is
// not retried.
type badAnswer struct{ why string }

func (e *badAnswer) Error() string { return "gcs: " + e.why }

// retryable: 408, 429, 5xx, or no answer at all (a transport error,
// including a body cut off mid-read).
func retryable(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Code == http.StatusRequestTimeout || ae.Code == http.StatusTooManyRequests || ae.Code >= 500
	}
	var bad *badAnswer
	return !errors.As(err, &bad)
}
