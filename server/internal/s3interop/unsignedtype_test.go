package s3interop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"hash"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// minio70Put sends a PUT exactly as minio-go v7.0.x (the version restic
// 0.14 to 0.16 and mc pin) sends PutObject and UploadPart over plain http:
// a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body signed by minio-go's own
// StreamingSignV4, with Content-Type left out of SignedHeaders (v7.0.x
// listed it in ignoredStreamingHeaders next to Authorization and
// User-Agent; later versions sign it). minio-go v7.0.x cannot share this
// module with the newest v7, so the request is built with the newest
// signer and Content-Type is added after signing, which yields the same
// headers and the same signature as the old client.
func minio70Put(t *testing.T, url, ak, sk, contentType string, data []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest("PUT", url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(data))
	req.Header.Set("User-Agent", "MinIO (linux; amd64) minio-go/v7.0.34 restic/0.14.0")
	req = signer.StreamingSignV4(req, ak, sk, "", "us-east-1", int64(len(data)), time.Now().UTC(), sha256Hasher{sha256.New()})
	if strings.Contains(req.Header.Get("Authorization"), "content-type") {
		t.Fatalf("content-type signed before it was set: %s", req.Header.Get("Authorization"))
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestMinio70StreamingUnsignedContentType is issue 24 item 1, the
// regression that broke restic and mc: S3 accepts a header-signed request
// whose Content-Type is not signed (AWS requires host and every x-amz-*
// header signed, Content-MD5 too, and nothing else), and stores the type
// sent. Single PUT and UploadPart, as minio-go v7.0.x sends both; then the
// newest minio-go stores and reads back a Content-Type it signs.
func TestMinio70StreamingUnsignedContentType(t *testing.T) {
	srv, mc, bucket := minioStart(t, false)
	ctx := context.Background()
	data := bytes.Repeat([]byte("restic pack "), 20000) // 240000 bytes: several 64 KiB chunks
	resp := minio70Put(t, srv.URL+"/"+bucket+"/data/pack", srv.AccessKey, srv.SecretKey, "application/octet-stream", data)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
		t.Fatalf("PutObject as minio-go v7.0.x: %d %s", resp.StatusCode, b)
	}
	resp.Body.Close()
	st, err := mc.StatObject(ctx, bucket, "data/pack", minio.StatObjectOptions{})
	if err != nil || st.Size != int64(len(data)) || st.ContentType != "application/octet-stream" {
		t.Fatalf("stat after the v7.0.x PUT: %+v %v", st, err)
	}

	core := minio.Core{Client: mc}
	id, err := core.NewMultipartUpload(ctx, bucket, "data/big", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte("p"), 5<<20)
	resp = minio70Put(t, srv.URL+"/"+bucket+"/data/big?partNumber=1&uploadId="+id, srv.AccessKey, srv.SecretKey, "application/octet-stream", part)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
		t.Fatalf("UploadPart as minio-go v7.0.x: %d %s", resp.StatusCode, b)
	}
	etag := strings.Trim(resp.Header.Get("ETag"), `"`)
	resp.Body.Close()
	if _, err := core.CompleteMultipartUpload(ctx, bucket, "data/big", id, []minio.CompletePart{{PartNumber: 1, ETag: etag}}, minio.PutObjectOptions{}); err != nil {
		t.Fatalf("complete: %v", err)
	}

	// The newest minio-go signs Content-Type; it is stored either way.
	if _, err := mc.PutObject(ctx, bucket, "typed", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{ContentType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
	if st, err := mc.StatObject(ctx, bucket, "typed", minio.StatObjectOptions{}); err != nil || st.ContentType != "text/plain" {
		t.Fatalf("newest minio-go: %+v %v", st, err)
	}
}

// sha256Hasher is the md5simd.Hasher minio-go's streaming signer hashes
// chunks with (minio-go builds the same around crypto/sha256).
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}
