package s3api

import (
	"encoding/xml"
	"net/http"

	"github.com/latchkey/latchkey/server/internal/s3model"
)

// Bucket default encryption: PutBucketEncryption, GetBucketEncryption and
// DeleteBucketEncryption (?encryption). A bucket whose default is AES256
// seals every object written to it afterwards without its own
// x-amz-server-side-encryption; objects already there keep what they were
// written with.

type sseConfiguration struct {
	XMLName xml.Name  `xml:"ServerSideEncryptionConfiguration"`
	NS      string    `xml:"xmlns,attr,omitempty"`
	Rules   []sseRule `xml:"Rule"`
}

type sseRule struct {
	Default          *sseByDefault    `xml:"ApplyServerSideEncryptionByDefault"`
	BucketKeyEnabled *bool            `xml:"BucketKeyEnabled"`
	Blocked          *sseBlockedTypes `xml:"BlockedEncryptionTypes"`
}

type sseByDefault struct {
	SSEAlgorithm   string `xml:"SSEAlgorithm"`
	KMSMasterKeyID string `xml:"KMSMasterKeyID,omitempty"`
}

type sseBlockedTypes struct {
	EncryptionType []string `xml:"EncryptionType"`
}

func (h *Handler) bucketEncryption(q *request, m string) error {
	switch m {
	case http.MethodPut:
		return h.putBucketEncryption(q)
	case http.MethodGet:
		return h.getBucketEncryption(q)
	case http.MethodDelete:
		if err := h.m.SetEncryption(q.ctx, q.bucket, ""); err != nil {
			return err
		}
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return errMethodNotAllowed(m, "BUCKET")
}

// putBucketEncryption accepts one rule whose default is AES256 (and SSE-C
// blocked, the only state here). aws:kms is answered as PutObject answers
// it; unblocking SSE-C is not implemented.
func (h *Handler) putBucketEncryption(q *request) error {
	var cfg sseConfiguration
	if err := readXML(q, &cfg); err != nil {
		return err
	}
	if len(cfg.Rules) != 1 || cfg.Rules[0].Default == nil {
		return errMalformedXML()
	}
	rule := cfg.Rules[0]
	if rule.Blocked != nil {
		for _, t := range rule.Blocked.EncryptionType {
			switch t {
			case "SSE-C":
			case "NONE":
				return errNotImplemented("Server-side encryption with customer-provided keys (SSE-C) is not implemented; it stays blocked")
			default:
				return errMalformedXML()
			}
		}
	}
	switch alg := rule.Default.SSEAlgorithm; alg {
	case s3model.SSEAES256:
		if rule.Default.KMSMasterKeyID != "" {
			return errInvalidArgument("a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms or aws:kms:dsse",
				"ApplyServerSideEncryptionByDefault", "")
		}
		if h.opts.SSE == nil {
			return errNotImplemented("Server side encryption specified but no SSE master key is configured")
		}
	case "aws:kms", "aws:kms:dsse":
		return errKMSKey(rule.Default.KMSMasterKeyID)
	default:
		return errMalformedXML()
	}
	if err := h.m.SetEncryption(q.ctx, q.bucket, s3model.SSEAES256); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// getBucketEncryption answers the bucket's default encryption, or, for a
// bucket without one, 404 ServerSideEncryptionConfigurationNotFoundError:
// objects written there without the header are not encrypted, and saying
// AES256 (as AWS does for every bucket since 2023) would be false.
func (h *Handler) getBucketEncryption(q *request) error {
	b, err := h.m.Bucket(q.bucket)
	if err != nil {
		return err
	}
	if b.SSE == "" {
		e := newErr(http.StatusNotFound, "ServerSideEncryptionConfigurationNotFoundError", "The server side encryption configuration was not found")
		e.BucketName = q.bucket
		return e
	}
	off := false
	return writeXML(q.w, http.StatusOK, sseConfiguration{NS: s3NS, Rules: []sseRule{{
		Default:          &sseByDefault{SSEAlgorithm: b.SSE},
		BucketKeyEnabled: &off,
		Blocked:          &sseBlockedTypes{EncryptionType: []string{"SSE-C"}},
	}}})
}
