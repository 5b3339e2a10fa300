package sigv4

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// parseAuthHeader parses
//
//	AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=…
func parseAuthHeader(r *http.Request) (authInfo, error) {
	h := r.Header.Get("Authorization")
	if len(h) > maxAuthHeaderLen {
		return authInfo{}, newErr(ErrAuthorizationHeaderMalformed, "the authorization header is longer than %d bytes", maxAuthHeaderLen)
	}
	alg, rest, _ := strings.Cut(h, " ")
	if alg != algorithm {
		return authInfo{}, ErrUnsupportedSignature
	}
	var ai authInfo
	var cred, signed string
	for _, part := range strings.Split(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "Credential":
			cred = val
		case "SignedHeaders":
			signed = val
		case "Signature":
			ai.signature = val
		}
	}
	if cred == "" || signed == "" || ai.signature == "" {
		return authInfo{}, newErr(ErrAuthorizationHeaderMalformed, "the authorization header needs Credential, SignedHeaders and Signature")
	}
	var err error
	if ai.accessKey, ai.scope, err = parseCredential(cred, ErrAuthorizationHeaderMalformed); err != nil {
		return authInfo{}, err
	}
	if ai.signed, err = parseSignedHeaders(signed, ErrAuthorizationHeaderMalformed); err != nil {
		return authInfo{}, err
	}
	if ai.time, err = requestTime(r); err != nil {
		return authInfo{}, err
	}
	return ai, nil
}

// parsePresigned parses the X-Amz-* query parameters of a presigned URL.
func parsePresigned(q [][2]string) (authInfo, error) {
	bad := ErrAuthorizationQueryParametersError
	get := func(name string) string { v, _ := queryGet(q, name); return v }
	if get("X-Amz-Algorithm") != algorithm {
		if get("X-Amz-Algorithm") == "" {
			return authInfo{}, newErr(bad, "X-Amz-Algorithm is missing")
		}
		return authInfo{}, ErrUnsupportedSignature
	}
	for _, name := range []string{"X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"} {
		if get(name) == "" {
			return authInfo{}, newErr(bad, "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters; %s is missing", name)
		}
	}
	ai := authInfo{presigned: true, signature: get("X-Amz-Signature")}
	var err error
	if ai.accessKey, ai.scope, err = parseCredential(get("X-Amz-Credential"), bad); err != nil {
		return authInfo{}, err
	}
	if ai.signed, err = parseSignedHeaders(get("X-Amz-SignedHeaders"), bad); err != nil {
		return authInfo{}, err
	}
	if ai.time, err = time.Parse(amzDateFormat, get("X-Amz-Date")); err != nil {
		return authInfo{}, newErr(bad, "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
	}
	secs, err := strconv.ParseInt(get("X-Amz-Expires"), 10, 64)
	if err != nil || secs < 1 {
		return authInfo{}, newErr(bad, "X-Amz-Expires must be a positive integer")
	}
	if time.Duration(secs)*time.Second > MaxPresignExpiry {
		return authInfo{}, newErr(bad, "X-Amz-Expires must be less than a week (in seconds) that is 604800")
	}
	ai.expires = time.Duration(secs) * time.Second
	return ai, nil
}

// parseCredential splits AK/date/region/service/aws4_request.
func parseCredential(cred string, bad *Error) (string, scope, error) {
	parts := strings.Split(cred, "/")
	if len(parts) < 5 || parts[len(parts)-1] != "aws4_request" {
		return "", scope{}, newErr(bad, "the credential %q is not of the form <access key>/<date>/<region>/<service>/aws4_request", cred)
	}
	n := len(parts)
	ak := strings.Join(parts[:n-4], "/")
	s := scope{date: parts[n-4], region: parts[n-3], service: parts[n-2]}
	if ak == "" {
		return "", scope{}, newErr(bad, "the credential has no access key")
	}
	if _, err := time.Parse(scopeDateFormat, s.date); err != nil {
		return "", scope{}, newErr(bad, "the credential date %q is not yyyyMMdd", s.date)
	}
	return ak, s, nil
}

// parseSignedHeaders checks the SignedHeaders list: lower-case, sorted,
// includes host.
func parseSignedHeaders(list string, bad *Error) ([]string, error) {
	hs := strings.Split(list, ";")
	if len(hs) > maxSignedHeaders {
		return nil, newErr(bad, "more than %d signed headers", maxSignedHeaders)
	}
	host := false
	for _, h := range hs {
		if h == "" || h != strings.ToLower(h) {
			return nil, newErr(bad, "signed header %q is empty or not lower-case", h)
		}
		host = host || h == "host"
	}
	if !host {
		return nil, newErr(bad, "the signed headers must include host")
	}
	if !sort.StringsAreSorted(hs) {
		return nil, newErr(bad, "the signed headers are not sorted")
	}
	return hs, nil
}

// requestTime is X-Amz-Date, or the Date header when X-Amz-Date is absent.
func requestTime(r *http.Request) (time.Time, error) {
	if v := r.Header.Get("X-Amz-Date"); v != "" {
		t, err := time.Parse(amzDateFormat, v)
		if err != nil {
			return time.Time{}, newErr(ErrAccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
		}
		return t, nil
	}
	if v := r.Header.Get("Date"); v != "" {
		t, err := http.ParseTime(v)
		if err != nil {
			return time.Time{}, newErr(ErrAccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
		}
		return t.UTC(), nil
	}
	return time.Time{}, newErr(ErrAccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
}
