package s3api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/latchkey/latchkey/server/internal/enginetest"
	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// TestSDKSmoke drives the handler, behind the real SigV4 verifier, with
// aws-sdk-go-v2 and its default checksum behaviour (aws-chunked bodies with
// trailing CRC32). The full interop matrix lives with store/s3store; this
// catches handler-side wire mistakes early.
func TestSDKSmoke(t *testing.T) {
	const ak, sk = "AKIDSMOKE", "smoke-secret"
	e := enginetest.Open(t)
	// TLS: the SDK sends unseekable bodies as aws-chunked with a trailing
	// checksum only over TLS.
	srv := httptest.NewTLSServer(MustNew(e, &Options{Auth: sigv4.New(sigv4.Credentials{ak: sk}.Lookup, nil), MinPartSize: 5 << 20}))
	t.Cleanup(srv.Close)
	s := &testServer{t: t, e: e, srv: srv}
	c := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.srv.URL), HTTPClient: s.srv.Client(), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, nil
		}),
		RetryMaxAttempts:           1,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
	})
	ctx := context.Background()
	b := aws.String("sdk-smoke")
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return ""
	}
	must(c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}))
	// A non-seekable body forces aws-chunked with a trailing checksum.
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("a/b c"), Body: io.NopCloser(strings.NewReader("hello")),
		IfNoneMatch: aws.String("*"), Metadata: map[string]string{"k": "v"}, ContentLength: aws.Int64(5)})
	if err != nil {
		t.Fatal(err)
	}
	if *put.ETag != md5ETag("hello") {
		t.Fatalf("etag %s", *put.ETag)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("a/b c"), Body: strings.NewReader("x"), IfNoneMatch: aws.String("*")})
	if code(err) != "PreconditionFailed" {
		t.Fatalf("second create: %v", err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("nope"), Body: strings.NewReader("x"), IfMatch: put.ETag})
	if code(err) != "NoSuchKey" {
		t.Fatalf("If-Match on missing: %v", err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("a/b c")})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(data) != "hello" || got.Metadata["k"] != "v" {
		t.Fatalf("get %q %v", data, got.Metadata)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("a/b c"), IfNoneMatch: put.ETag})
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusNotModified {
		t.Fatalf("head 304: %v", err)
	}
	// Multipart through the SDK, with If-None-Match on Complete.
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	part1 := bytes.Repeat([]byte("p"), 5<<20)
	u1, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp"), UploadId: mp.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(part1)})
	if err != nil {
		t.Fatal(err)
	}
	u2, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp"), UploadId: mp.UploadId, PartNumber: aws.Int32(2), Body: strings.NewReader("end")})
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: mp.UploadId,
		IfNoneMatch:     aws.String("*"),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: u1.ETag}, {PartNumber: aws.Int32(2), ETag: u2.ETag}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(*done.ETag, `-2"`) {
		t.Fatalf("multipart etag %s", *done.ETag)
	}
	// Listing with the paginator.
	for i := range 5 {
		must(c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("list/" + string(rune('a'+i))), Body: strings.NewReader("x")}))
	}
	pg := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("list/"), MaxKeys: aws.Int32(2)})
	n := 0
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(out.Contents)
	}
	if n != 5 {
		t.Fatalf("paginator saw %d keys", n)
	}
	// DeleteObjects with a per-key ETag precondition (the SDK adds a
	// checksum of the body).
	del, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("list/a")}, {Key: aws.String("list/b"), ETag: aws.String(`"bad"`)},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(del.Deleted) != 1 || len(del.Errors) != 1 || *del.Errors[0].Code != "PreconditionFailed" {
		t.Fatalf("delete objects: %+v %+v", del.Deleted, del.Errors)
	}
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("list/c"), IfMatch: aws.String(`"bad"`)})
	if code(err) != "PreconditionFailed" {
		t.Fatalf("conditional delete: %v", err)
	}
	// Versioning through the SDK.
	must(c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b, VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}))
	d, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("list/d")})
	if err != nil || d.DeleteMarker == nil || !*d.DeleteMarker {
		t.Fatalf("versioned delete: %+v %v", d, err)
	}
	vs, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: b, Prefix: aws.String("list/d")})
	if err != nil || len(vs.DeleteMarkers) != 1 || len(vs.Versions) != 1 {
		t.Fatalf("versions: %+v %v", vs, err)
	}
	// Copy with a copy-source condition.
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy"), CopySource: aws.String("sdk-smoke/a/b%20c"), CopySourceIfNoneMatch: put.ETag})
	if code(err) != "PreconditionFailed" {
		t.Fatalf("copy-source If-None-Match matching: %v", err)
	}
	must(c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy"), CopySource: aws.String("sdk-smoke/a/b%20c"), IfNoneMatch: aws.String("*")}))
	// Wrong credentials.
	bad := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.srv.URL), HTTPClient: s.srv.Client(), UsePathStyle: true, RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: ak, SecretAccessKey: "wrong"}, nil
		})})
	_, err = bad.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: b})
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusForbidden {
		t.Fatalf("wrong secret: %v", err)
	}
}
