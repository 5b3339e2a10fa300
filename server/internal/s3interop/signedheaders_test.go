package s3interop

import (
	"context"
	_ "embed"
	"encoding/base64"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/latchkey/latchkey/server"
)

// TestSDKPresignedChecksumHeaders: aws-sdk-go-v2's presigned PUT with a
// checksum and user metadata signs those x-amz-* headers (they are in the
// SDK's list of headers it never hoists into the query): sent as signed,
// the PUT works; the checksum is verified; one more unsigned x-amz-*
// header is refused as S3 refuses it.
func TestSDKPresignedChecksumHeaders(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	pc := s3.NewPresignClient(c)
	body := "presigned with a checksum"
	sum := crc32.ChecksumIEEE([]byte(body))
	crc := base64.StdEncoding.EncodeToString([]byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
	put, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("p/sum"),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32, ChecksumCRC32: aws.String(crc),
		Metadata: map[string]string{"colour": "blue"}}, s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"X-Amz-Checksum-Crc32", "X-Amz-Meta-Colour"} {
		if put.SignedHeader.Get(h) == "" {
			t.Fatalf("the SDK did not sign %s: %v (URL %s)", h, put.SignedHeader, put.URL)
		}
	}
	extra := put.SignedHeader.Clone()
	extra.Set("x-amz-meta-sneaky", "1")
	if r := httpDo(t, put.Method, put.URL, extra, body); r.StatusCode != 403 || !strings.Contains(r.body, "<HeadersNotSigned>x-amz-meta-sneaky</HeadersNotSigned>") {
		t.Fatalf("presigned PUT plus an unsigned header: %d %s", r.StatusCode, r.body)
	}
	if r := httpDo(t, put.Method, put.URL, put.SignedHeader, "not the signed body"); r.StatusCode != 400 || !strings.Contains(r.body, "BadDigest") {
		t.Fatalf("presigned PUT with a body that fails its signed checksum: %d %s", r.StatusCode, r.body)
	}
	if r := httpDo(t, put.Method, put.URL, put.SignedHeader, body); r.StatusCode != 200 {
		t.Fatalf("presigned PUT with its signed headers: %d %s", r.StatusCode, r.body)
	}
	out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("p/sum")})
	if err != nil || out.Metadata["colour"] != "blue" || aws.ToInt64(out.ContentLength) != int64(len(body)) {
		t.Fatalf("head: %v %v", out, err)
	}
}

//go:embed testdata/boto3_https_signed.py
var boto3HTTPSSignedScript []byte

// TestBoto3HTTPSSigned: boto3 with credentials over https (unsigned
// payloads; every x-amz-* header it sends is signed) works against the
// signed-header rule: PUT with metadata, CopyObject REPLACE,
// UploadPartCopy, a SHA-256 checksum (testdata/boto3_https_signed.py).
func TestBoto3HTTPSSigned(t *testing.T) {
	py := boto3Python(t)
	srv, _, cert := tlsServerWith(t, server.Config{})
	runCheckScript(t, py, "boto3_https_signed.py", boto3HTTPSSignedScript, 4, srv.URL, cert, srv.AccessKey, srv.SecretKey)
}
