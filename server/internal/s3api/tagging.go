package s3api

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Object tags, as S3 limits them: at most MaxTags per object, keys of 1 to
// MaxTagKeyLength and values of up to MaxTagValueLength characters, counted
// in UTF-16 code units as S3 does. Tags live in the version record, so a
// new version starts with the tags its write carried and PUT ?tagging
// changes one version without a new one.
const (
	MaxTags           = 10
	MaxTagKeyLength   = 128
	MaxTagValueLength = 256
)

type tagPair struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type tagSet struct {
	Tags []tagPair `xml:"Tag"`
}

type tagging struct {
	XMLName xml.Name `xml:"Tagging"`
	NS      string   `xml:"xmlns,attr,omitempty"`
	TagSet  tagSet   `xml:"TagSet"`
}

func errInvalidTag(msg string) *Error { return newErr(http.StatusBadRequest, "InvalidTag", msg) }

func errTaggingHeader() *Error {
	return errInvalidArgument("The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.", "x-amz-tagging", "")
}

// validTagChars is S3's documented tag pattern
// ^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$ over valid UTF-8.
func validTagChars(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.Is(unicode.Z, r) && !unicode.IsNumber(r) && !strings.ContainsRune("_.:/=+-@", r) {
			return false
		}
	}
	return true
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// checkTags applies S3's limits to a tag set (duplicates are checked by
// the callers, whose errors differ).
func checkTags(tags map[string]string) error {
	if len(tags) > MaxTags {
		return newErr(http.StatusBadRequest, "BadRequest", "Object tags cannot be greater than 10")
	}
	for k, v := range tags {
		switch {
		case k == "" || !validTagChars(k):
			return errInvalidTag("The TagKey you have provided is invalid")
		case !validTagChars(v):
			return errInvalidTag("The TagValue you have provided is invalid")
		case utf16Len(k) > MaxTagKeyLength:
			return errInvalidTag("The TagKey you have provided is too long, max 128")
		case utf16Len(v) > MaxTagValueLength:
			return errInvalidTag("The TagValue you have provided is too long, max 256")
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			return errInvalidTag("Your TagKey cannot be prefixed with aws:")
		}
	}
	return nil
}

// headerTags parses the x-amz-tagging header of PutObject,
// CreateMultipartUpload and CopyObject (REPLACE): URL query syntax,
// without duplicate names. nil when absent or empty.
func headerTags(r *http.Request) (map[string]string, error) {
	raw := r.Header.Get("X-Amz-Tagging")
	if raw == "" {
		return nil, nil
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return nil, errTaggingHeader()
	}
	tags := make(map[string]string, len(vals))
	for k, vs := range vals {
		if len(vs) != 1 {
			return nil, errTaggingHeader()
		}
		tags[k] = vs[0]
	}
	if err := checkTags(tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// bodyTags parses a PutObjectTagging body.
func bodyTags(q *request) (map[string]string, error) {
	var in tagging
	if err := readXML(q, &in); err != nil {
		return nil, err
	}
	tags := make(map[string]string, len(in.TagSet.Tags))
	for _, t := range in.TagSet.Tags {
		if _, dup := tags[t.Key]; dup {
			return nil, errInvalidTag("Cannot provide multiple Tags with the same key")
		}
		tags[t.Key] = t.Value
	}
	if err := checkTags(tags); err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, nil
	}
	return tags, nil
}

// setTagCount sets x-amz-tagging-count on GET/HEAD of a tagged object.
func setTagCount(w http.ResponseWriter, tags map[string]string) {
	if len(tags) > 0 {
		w.Header().Set("X-Amz-Tagging-Count", strconv.Itoa(len(tags)))
	}
}

func (h *Handler) getObjectTagging(q *request) error {
	vid, byID, err := validVersionParam(q)
	if err != nil {
		return err
	}
	v, _, versioning, err := h.lookup(q.bucket, q.key, vid, byID, q.r.Method)
	if err != nil {
		return err
	}
	out := tagging{NS: s3NS}
	for k, val := range v.Tags {
		out.TagSet.Tags = append(out.TagSet.Tags, tagPair{Key: k, Value: val})
	}
	sort.Slice(out.TagSet.Tags, func(i, j int) bool { return out.TagSet.Tags[i].Key < out.TagSet.Tags[j].Key })
	setVersionHeader(q.w, versioning, v.VersionID)
	return writeXML(q.w, http.StatusOK, out)
}

// putObjectTagging (tags != nil or the body's set) and deleteObjectTagging
// (del) replace the tag set of one version in place.
func (h *Handler) putObjectTagging(q *request, del bool) error {
	vid, byID, err := validVersionParam(q)
	if err != nil {
		return err
	}
	var tags map[string]string
	if !del {
		if tags, err = bodyTags(q); err != nil {
			return err
		}
	}
	f, err := h.m.SetTags(q.ctx, q.bucket, q.key, vid, byID, tags)
	if err != nil {
		return modelError(err, q.r.Method)
	}
	setVersionHeader(q.w, f.Versioning, f.Version.VersionID)
	if del {
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}
