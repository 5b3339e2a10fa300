package s3api

import (
	"net/http"
)

// absentConfig is AWS's answer to reading a bucket configuration the
// bucket does not have. The server keeps none of these, so every existing
// bucket is one without: GET answers this 404 (clients read it as "none":
// minio-go takes NoSuchBucketPolicy for a private bucket, where 501 made
// mc stat report "Anonymous: Enabled"), DELETE answers 204 as AWS does for
// an absent configuration, and PUT stays 501 NotImplemented.
type absentConfig struct {
	code, msg string
	deletable bool // DELETE of the sub-resource exists and answers 204
}

// absentConfigs maps the bucket sub-resource to its absent answer; the
// codes and messages are AWS's.
var absentConfigs = map[string]absentConfig{
	"policy":       {"NoSuchBucketPolicy", "The bucket policy does not exist", true},
	"policyStatus": {"NoSuchBucketPolicy", "The bucket policy does not exist", false},
	"object-lock":  {"ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this bucket", false},
	"cors":         {"NoSuchCORSConfiguration", "The CORS configuration does not exist", true},
	"lifecycle":    {"NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist", true},
	"website":      {"NoSuchWebsiteConfiguration", "The specified bucket does not have a website configuration", true},
	"tagging":      {"NoSuchTagSet", "The TagSet does not exist", true},
	"replication":  {"ReplicationConfigurationNotFoundError", "The replication configuration was not found", true},
}

// routeAbsentConfig answers GET and DELETE of the sub-resources in
// absentConfigs; ok is false for any other request.
func (h *Handler) routeAbsentConfig(q *request, m string) (ok bool, err error) {
	if m != http.MethodGet && m != http.MethodDelete {
		return false, nil
	}
	for name, c := range absentConfigs {
		if !q.has(name) || (m == http.MethodDelete && !c.deletable) {
			continue
		}
		if _, err := h.m.Bucket(q.bucket); err != nil {
			return true, err
		}
		if m == http.MethodDelete {
			q.w.WriteHeader(http.StatusNoContent)
			return true, nil
		}
		e := newErr(http.StatusNotFound, c.code, c.msg)
		e.BucketName = q.bucket
		return true, e
	}
	return false, nil
}
