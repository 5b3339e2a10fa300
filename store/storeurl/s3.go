package storeurl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/logging"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
)

// openS3 opens s3://bucket/prefix?endpoint=URL&region=R (s3store).
// Without endpoint=, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL is the
// endpoint when set. create-bucket=1 creates the bucket when it does not exist (as
// azblob's create-container=1).
// Credentials come from the standard AWS environment variables and files.
// With endpoint set, requests go path-style to that server.
// no-compare-and-delete=1 declares a server whose conditional DELETE is not
// AWS-exact (Versity Gateway).
func openS3(ctx context.Context, u *url.URL) (store.Store, error) {
	q, err := bucketParams(u, "bucket", "endpoint", "region", "no-compare-and-delete", "create-bucket")
	if err != nil {
		return nil, err
	}
	create, err := flag(q, "create-bucket")
	if err != nil {
		return nil, err
	}
	opts := &s3store.Options{Endpoint: q.Get("endpoint"), Region: q.Get("region")}
	if opts.Endpoint == "" {
		// The AWS CLI's variables (eval "$(latchkey serve --print-env)"),
		// path-style like endpoint=.
		opts.Endpoint = cmp.Or(os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"))
	}
	if ep := opts.Endpoint; ep != "" {
		if _, err := httpEndpoint(ep, "http://host:port or https://host"); err != nil {
			return nil, err
		}
	}
	if opts.NoCompareAndDelete, err = flag(q, "no-compare-and-delete"); err != nil {
		return nil, err
	}
	creds, err := s3Credentials(ctx, opts.Region)
	if err != nil {
		return nil, err
	}
	opts.Credentials = creds
	s, err := s3store.Open(ctx, u.Host, strings.TrimPrefix(u.Path, "/"), opts)
	if err != nil {
		return nil, err
	}
	if create {
		if err := s.CreateBucket(ctx); err != nil {
			return nil, fmt.Errorf("create-bucket=1: %w", err)
		}
	}
	return s, nil
}

// s3Credentials resolves the AWS credential chain once, quietly, so that
// missing credentials are one clear error rather than the SDK's warnings
// (falling back to IMDSv1) and an error per request.
func s3Credentials(ctx context.Context, region string) (aws.CredentialsProvider, error) {
	loadOpts := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Credentials == nil {
		return nil, errNoAWSCredentials
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cfg.Credentials.Retrieve(rctx); err != nil {
		return nil, errNoAWSCredentials
	}
	return cfg.Credentials, nil
}

var errNoAWSCredentials = errors.New("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY " +
	"(for latchkey serve: eval \"$(latchkey serve --print-env)\"), or AWS_PROFILE with ~/.aws/credentials")
