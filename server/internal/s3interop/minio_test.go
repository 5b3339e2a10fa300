package s3interop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server/servertest"
)

// minioClient is minio-go as an application builds it. trailing turns on
// trailing-checksum support (signed chunks + signed trailer over http).
func minioClient(t *testing.T, srv *servertest.Server, ak, sk string, trailing bool) *minio.Client {
	t.Helper()
	u, _ := url.Parse(srv.URL)
	c, err := minio.New(u.Host, &minio.Options{
		Creds:           credentials.NewStaticV4(ak, sk, ""),
		Secure:          false,
		Region:          "us-east-1",
		BucketLookup:    minio.BucketLookupPath,
		TrailingHeaders: trailing,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func minioStart(t *testing.T, trailing bool) (*servertest.Server, *minio.Client, string) {
	t.Helper()
	srv := servertest.Start(t, nil)
	c := minioClient(t, srv, srv.AccessKey, srv.SecretKey, trailing)
	bucket := testutil.RandomName("minio-")
	if err := c.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatalf("MakeBucket: %v", err)
	}
	return srv, c, bucket
}

func minioStatus(err error) (int, string) {
	if err == nil {
		return 200, ""
	}
	r := minio.ToErrorResponse(err)
	return r.StatusCode, r.Code
}

// TestMinioUploads: single PUTs with signed aws-chunked bodies (the default
// over http), with a signed trailer and CRC32C, and a multipart upload.
func TestMinioUploads(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		trailing bool
		opts     minio.PutObjectOptions
		size     int
	}{
		{"signed chunks", false, minio.PutObjectOptions{}, 200 << 10},
		{"signed chunks and trailer crc32c", true, minio.PutObjectOptions{Checksum: minio.ChecksumCRC32C}, 200 << 10},
		{"multipart", false, minio.PutObjectOptions{PartSize: 5 << 20}, 11 << 20},
		{"multipart with trailers", true, minio.PutObjectOptions{PartSize: 5 << 20, Checksum: minio.ChecksumCRC32C}, 11 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, mc, bucket := minioStart(t, c.trailing)
			data := bytes.Repeat([]byte("0123456789abcdef"), c.size/16)
			info, err := mc.PutObject(ctx, bucket, "obj/"+c.name, bytes.NewReader(data), int64(len(data)), c.opts)
			if err != nil {
				t.Fatalf("PutObject: %v", err)
			}
			obj, err := mc.GetObject(ctx, bucket, "obj/"+c.name, minio.GetObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(obj)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(data))
			}
			if c.opts.PartSize > 0 && !strings.Contains(info.ETag, "-") {
				t.Fatalf("multipart ETag %q", info.ETag)
			}
		})
	}
}

// TestMinioConditionalRace: 16 concurrent If-None-Match: * PUTs, one winner.
func TestMinioConditionalRace(t *testing.T) {
	_, mc, bucket := minioStart(t, false)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := minio.PutObjectOptions{}
			opts.SetMatchETagExcept("*")
			body := fmt.Sprintf("writer %d", i)
			_, errs[i] = mc.PutObject(ctx, bucket, "race", strings.NewReader(body), int64(len(body)), opts)
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		st, code := minioStatus(err)
		switch {
		case st == 200:
			won++
		case st == 412 || (st == 409 && code == "ConditionalRequestConflict"):
		default:
			t.Fatalf("writer %d: %d %s %v", i, st, code, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d winners", won)
	}
	// If-Match with a stale ETag.
	st, _ := mc.StatObject(ctx, bucket, "race", minio.StatObjectOptions{})
	opts := minio.PutObjectOptions{}
	opts.SetMatchETag(st.ETag)
	if _, err := mc.PutObject(ctx, bucket, "race", strings.NewReader("next"), 4, opts); err != nil {
		t.Fatalf("If-Match current: %v", err)
	}
	if _, err := mc.PutObject(ctx, bucket, "race", strings.NewReader("late"), 4, opts); func() bool { s, _ := minioStatus(err); return s != 412 }() {
		t.Fatalf("If-Match stale: %v", err)
	}
}

// TestMinioVersioning: versions and delete markers through minio-go.
func TestMinioVersioning(t *testing.T) {
	_, mc, bucket := minioStart(t, false)
	ctx := context.Background()
	if err := mc.EnableVersioning(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"one", "two"} {
		if _, err := mc.PutObject(ctx, bucket, "k", strings.NewReader(v), int64(len(v)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := mc.RemoveObject(ctx, bucket, "k", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	var versions, markers int
	for o := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{WithVersions: true, Prefix: "k"}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if o.IsDeleteMarker {
			markers++
		} else {
			versions++
		}
	}
	if versions != 2 || markers != 1 {
		t.Fatalf("%d versions, %d markers", versions, markers)
	}
	if _, err := mc.StatObject(ctx, bucket, "k", minio.StatObjectOptions{}); func() bool { s, _ := minioStatus(err); return s != 404 }() {
		t.Fatalf("Stat under a marker: %v", err)
	}
}

// TestMinioPresigned: presigned GET and PUT, and wrong credentials.
func TestMinioPresigned(t *testing.T) {
	srv, mc, bucket := minioStart(t, false)
	ctx := context.Background()
	pu, err := mc.PresignedPutObject(ctx, bucket, "pre", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("PUT", pu.String(), strings.NewReader("presigned"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	gu, err := mc.PresignedGetObject(ctx, bucket, "pre", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(gu.String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "presigned" {
		t.Fatalf("presigned GET: %d %q", resp.StatusCode, b)
	}

	bad := minioClient(t, srv, srv.AccessKey, "wrong-secret", false)
	_, err = bad.PutObject(ctx, bucket, "x", strings.NewReader("x"), 1, minio.PutObjectOptions{})
	if st, code := minioStatus(err); st != 403 || code != "SignatureDoesNotMatch" {
		t.Fatalf("wrong secret: %d %s %v", st, code, err)
	}
	unknown := minioClient(t, srv, "AKIAUNKNOWNKEY000000", srv.SecretKey, false)
	_, err = unknown.StatObject(ctx, bucket, "pre", minio.StatObjectOptions{})
	if st, _ := minioStatus(err); st != 403 {
		t.Fatalf("unknown key: %d %v", st, err)
	}
	_, err = unknown.GetObject(ctx, bucket, "pre", minio.GetObjectOptions{})
	if err == nil {
		obj, _ := unknown.GetObject(ctx, bucket, "pre", minio.GetObjectOptions{})
		_, err = io.ReadAll(obj)
	}
	if st, code := minioStatus(err); st != 403 || code != "InvalidAccessKeyId" {
		t.Fatalf("unknown key GET: %d %s %v", st, code, err)
	}
}
