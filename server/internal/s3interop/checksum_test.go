package s3interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func b64crc(b []byte) string {
	h := crc32.NewIEEE()
	h.Write(b)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// TestSDKChecksumsKept: the verified x-amz-checksum-* of a PutObject comes
// back on the PUT, on HEAD/GET in checksum mode (the SDK then validates the
// download) and in GetObjectAttributes; multipart uploads get S3's
// composite ("-N") or full-object checksums.
func TestSDKChecksumsKept(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	body := []byte("checksummed body")
	want := b64crc(body)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: bytes.NewReader(body),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(put.ChecksumCRC32) != want || put.ChecksumType != types.ChecksumTypeFullObject {
		t.Fatalf("PutObject ChecksumCRC32 %q type %q, want %q FULL_OBJECT", aws.ToString(put.ChecksumCRC32), put.ChecksumType, want)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("k"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumCRC32) != want {
		t.Fatalf("HeadObject in checksum mode: %v %q", err, aws.ToString(head.ChecksumCRC32))
	}
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(get.Body)
	get.Body.Close()
	if err != nil || !bytes.Equal(got, body) || aws.ToString(get.ChecksumCRC32) != want {
		t.Fatalf("GetObject: %v %q %q", err, got, aws.ToString(get.ChecksumCRC32))
	}
	attrs, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &bucket, Key: aws.String("k"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesChecksum,
			types.ObjectAttributesObjectSize, types.ObjectAttributesStorageClass}})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Checksum == nil || aws.ToString(attrs.Checksum.ChecksumCRC32) != want || aws.ToInt64(attrs.ObjectSize) != int64(len(body)) ||
		attrs.StorageClass != types.StorageClassStandard || "\""+aws.ToString(attrs.ETag)+"\"" != aws.ToString(put.ETag) {
		t.Fatalf("GetObjectAttributes: %+v %+v", attrs, attrs.Checksum)
	}

	for _, tc := range []struct {
		alg  types.ChecksumAlgorithm
		typ  types.ChecksumType
		want string
	}{
		{types.ChecksumAlgorithmCrc32, types.ChecksumTypeComposite, "composite"},
		{types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject, b64crc([]byte(strings.Repeat("a", 5<<20) + "tail"))},
	} {
		key := "mp-" + string(tc.typ)
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key,
			ChecksumAlgorithm: tc.alg, ChecksumType: tc.typ})
		if err != nil {
			t.Fatal(err)
		}
		var parts []types.CompletedPart
		var raws []byte
		for i, p := range []string{strings.Repeat("a", 5<<20), "tail"} {
			r, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: strings.NewReader(p), ChecksumAlgorithm: tc.alg})
			if err != nil {
				t.Fatal(err)
			}
			if aws.ToString(r.ChecksumCRC32) != b64crc([]byte(p)) {
				t.Fatalf("UploadPart %d ChecksumCRC32 %q", i+1, aws.ToString(r.ChecksumCRC32))
			}
			raw, _ := base64.StdEncoding.DecodeString(*r.ChecksumCRC32)
			raws = append(raws, raw...)
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: r.ETag, ChecksumCRC32: r.ChecksumCRC32})
		}
		if tc.want == "composite" {
			tc.want = b64crc(raws) + "-2"
		}
		done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(done.ChecksumCRC32) != tc.want || done.ChecksumType != tc.typ {
			t.Fatalf("%s: Complete ChecksumCRC32 %q type %q, want %q", tc.typ, aws.ToString(done.ChecksumCRC32), done.ChecksumType, tc.want)
		}
		// GetObject in checksum mode: the SDK validates a full-object
		// checksum over the body it reads (and skips a composite one).
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, get.Body)
		get.Body.Close()
		if err != nil || n != 5<<20+4 || aws.ToString(get.ChecksumCRC32) != tc.want {
			t.Fatalf("%s: GetObject: %v %d %q", tc.typ, err, n, aws.ToString(get.ChecksumCRC32))
		}
		attrs, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &bucket, Key: &key,
			ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts, types.ObjectAttributesChecksum}})
		if err != nil {
			t.Fatal(err)
		}
		if attrs.ObjectParts == nil || aws.ToInt32(attrs.ObjectParts.TotalPartsCount) != 2 || len(attrs.ObjectParts.Parts) != 2 ||
			aws.ToInt64(attrs.ObjectParts.Parts[1].Size) != 4 || aws.ToString(attrs.ObjectParts.Parts[1].ChecksumCRC32) != b64crc([]byte("tail")) {
			t.Fatalf("%s: ObjectParts %+v", tc.typ, attrs.ObjectParts)
		}
	}
}
