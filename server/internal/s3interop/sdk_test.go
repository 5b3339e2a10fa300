package s3interop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKConditionalPutRace: of 16 concurrent If-None-Match: * PUTs of one
// key exactly one gets 200; the others 412 (or 409); the object holds the
// winner's bytes.
func TestSDKConditionalPutRace(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		key := fmt.Sprintf("race/%d", round)
		var wg sync.WaitGroup
		results := make([]error, 16)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, results[i] = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key,
					Body: strings.NewReader(fmt.Sprintf("writer %d", i)), IfNoneMatch: aws.String("*")})
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range results {
			st, code := status(err)
			switch {
			case st == 200 && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both won", round, winner, i)
			case st == 200:
				winner = i
			case st == 412 && code == "PreconditionFailed", st == 409 && code == "ConditionalRequestConflict":
			default:
				t.Fatalf("round %d: writer %d: %d %q %v", round, i, st, code, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won", round)
		}
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(b) != fmt.Sprintf("writer %d", winner) {
			t.Fatalf("round %d: stored %q, winner %d", round, b, winner)
		}
	}
}

func TestSDKIfMatch(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	key := "cas"
	p1, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("2"), IfMatch: p1.ETag}); err != nil {
		t.Fatalf("If-Match current: %v", err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("3"), IfMatch: p1.ETag})
	wantStatus(t, "If-Match stale", err, 412, "PreconditionFailed")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("missing"), Body: strings.NewReader("3"), IfMatch: p1.ETag})
	wantStatus(t, "If-Match missing", err, 404, "NoSuchKey")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("3"), IfNoneMatch: p1.ETag})
	wantStatus(t, "If-None-Match <etag>", err, 501, "NotImplemented")
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key, IfMatch: p1.ETag})
	wantStatus(t, "DELETE If-Match stale", err, 412, "PreconditionFailed")
}

// TestSDKMultipartIfNoneMatch completes a multipart upload with
// If-None-Match: *; a second one on the same key gets 412.
func TestSDKMultipartIfNoneMatch(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	key := "mpu/object"
	part1 := bytes.Repeat([]byte("a"), 5<<20)
	part2 := []byte("tail")
	upload := func() (*s3.CompleteMultipartUploadOutput, error) {
		cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		var parts []types.CompletedPart
		for i, p := range [][]byte{part1, part2} {
			up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: cr.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
			if err != nil {
				t.Fatalf("UploadPart %d: %v", i+1, err)
			}
			parts = append(parts, types.CompletedPart{ETag: up.ETag, PartNumber: aws.Int32(int32(i + 1)),
				ChecksumCRC32: up.ChecksumCRC32})
		}
		return c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: cr.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}, IfNoneMatch: aws.String("*")})
	}
	out, err := upload()
	if err != nil {
		t.Fatalf("first Complete: %v", err)
	}
	if !strings.HasSuffix(strings.Trim(aws.ToString(out.ETag), `"`), "-2") {
		t.Fatalf("multipart ETag %s, want the -2 form", aws.ToString(out.ETag))
	}
	_, err = upload()
	wantStatus(t, "second Complete with If-None-Match", err, 412, "PreconditionFailed")
	g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(g.Body)
	g.Body.Close()
	if len(b) != len(part1)+len(part2) || !bytes.HasSuffix(b, part2) {
		t.Fatalf("object of %d bytes", len(b))
	}
}

// TestSDKVersioning: versions, a delete marker, If-None-Match over the
// marker, and reads addressed to the marker.
func TestSDKVersioning(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	key := "v/key"
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &bucket,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	v1, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("one")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(v1.VersionId) == "" || aws.ToString(v1.VersionId) == "null" {
		t.Fatalf("no version id: %q", aws.ToString(v1.VersionId))
	}
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	if !aws.ToBool(del.DeleteMarker) || aws.ToString(del.VersionId) == "" {
		t.Fatalf("delete: marker %v version %q", aws.ToBool(del.DeleteMarker), aws.ToString(del.VersionId))
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	wantStatus(t, "GET under a delete marker", err, 404, "NoSuchKey")
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key, VersionId: del.VersionId})
	wantStatus(t, "GET of the marker's version", err, 405, "MethodNotAllowed")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("x"), IfMatch: v1.ETag})
	wantStatus(t, "If-Match over a marker", err, 404, "NoSuchKey")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("two"), IfNoneMatch: aws.String("*")}); err != nil {
		t.Fatalf("If-None-Match over a marker: %v", err)
	}
	old, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key, VersionId: v1.VersionId})
	if err != nil {
		t.Fatalf("GET v1 by id: %v", err)
	}
	b, _ := io.ReadAll(old.Body)
	old.Body.Close()
	if string(b) != "one" {
		t.Fatalf("v1 = %q", b)
	}
	lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &bucket, Prefix: aws.String("v/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(lv.Versions) != 2 || len(lv.DeleteMarkers) != 1 {
		t.Fatalf("%d versions, %d markers; want 2 and 1", len(lv.Versions), len(lv.DeleteMarkers))
	}
	latest := 0
	for _, v := range lv.Versions {
		if aws.ToBool(v.IsLatest) {
			latest++
		}
	}
	if latest != 1 || aws.ToBool(lv.DeleteMarkers[0].IsLatest) {
		t.Fatalf("IsLatest wrong: %d latest versions, marker latest %v", latest, aws.ToBool(lv.DeleteMarkers[0].IsLatest))
	}
}

// TestSDKPresigned: presigned GET and PUT from the SDK's presign client,
// a presigned PUT carrying If-None-Match as a signed header, and one
// carrying it as a signed query parameter.
func TestSDKPresigned(t *testing.T) {
	srv, c, bucket := start(t)
	ctx := context.Background()
	pc := s3.NewPresignClient(c)
	put, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("p/put")}, s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r := httpDo(t, put.Method, put.URL, put.SignedHeader, "via presigned put"); r.StatusCode != 200 {
		t.Fatalf("presigned PUT: %d", r.StatusCode)
	}
	get, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("p/put")}, s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	r := httpDo(t, get.Method, get.URL, get.SignedHeader, "")
	if r.StatusCode != 200 || r.body != "via presigned put" {
		t.Fatalf("presigned GET: %d %q", r.StatusCode, r.body)
	}
	tampered := strings.Replace(get.URL, "p/put", "p/other", 1)
	if r := httpDo(t, "GET", tampered, nil, ""); r.StatusCode != 403 || !strings.Contains(r.body, "SignatureDoesNotMatch") {
		t.Fatalf("tampered presigned GET: %d %s", r.StatusCode, r.body)
	}

	inm, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("p/inm"), IfNoneMatch: aws.String("*")}, s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r := httpDo(t, inm.Method, inm.URL, inm.SignedHeader, "first"); r.StatusCode != 200 {
		t.Fatalf("presigned If-None-Match PUT (header): %d %s", r.StatusCode, r.body)
	}
	if r := httpDo(t, inm.Method, inm.URL, inm.SignedHeader, "second"); r.StatusCode != 412 {
		t.Fatalf("second presigned If-None-Match PUT (header): %d %s", r.StatusCode, r.body)
	}

	// If-None-Match as a signed query parameter (LocalStack's
	// test_pre_signed_url_if_none_match form).
	req, _ := http.NewRequest("PUT", srv.URL+"/"+bucket+"/p/query?If-None-Match=%2A&X-Amz-Expires=3600", nil)
	u, hdr, err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).PresignHTTP(ctx,
		aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r := httpDo(t, "PUT", u, hdr, "first"); r.StatusCode != 200 {
		t.Fatalf("presigned If-None-Match PUT (query): %d %s", r.StatusCode, r.body)
	}
	if r := httpDo(t, "PUT", u, hdr, "second"); r.StatusCode != 412 {
		t.Fatalf("second presigned If-None-Match PUT (query): %d %s", r.StatusCode, r.body)
	}
}

type httpResult struct {
	StatusCode int
	body       string
}

func httpDo(t *testing.T, method, url string, hdr http.Header, body string) httpResult {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if strings.EqualFold(k, "host") {
			continue
		}
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return httpResult{resp.StatusCode, string(b)}
}

// TestSDKWrongCredentials: unknown key, wrong secret, no credentials.
func TestSDKWrongCredentials(t *testing.T) {
	srv, _, bucket := start(t)
	ctx := context.Background()
	bad := sdkClient(t, srv, srv.AccessKey, "wrong-secret")
	_, err := bad.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader("x")})
	wantStatus(t, "wrong secret", err, 403, "SignatureDoesNotMatch")
	unknown := sdkClient(t, srv, "AKIAUNKNOWNKEY000000", srv.SecretKey)
	_, err = unknown.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k")})
	wantStatus(t, "unknown access key", err, 403, "InvalidAccessKeyId")
	r := httpDo(t, "GET", srv.URL+"/"+bucket+"/k", nil, "")
	if r.StatusCode != 403 || !strings.Contains(r.body, "<Code>AccessDenied</Code>") {
		t.Fatalf("anonymous GET: %d %s", r.StatusCode, r.body)
	}
}
