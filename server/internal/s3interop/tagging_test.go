package s3interop

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKObjectTagging: what `aws s3 cp` between S3 locations needs
// (GetObjectTagging of an untagged source answers an empty TagSet), and
// tags through PutObject, CopyObject and PutObjectTagging, with AWS's
// errors for too many tags.
func TestSDKObjectTagging(t *testing.T) {
	_, c, bucket := start(t)
	ctx := context.Background()
	src := "src"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &src, Body: strings.NewReader("data")}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: &src})
	if err != nil || len(got.TagSet) != 0 {
		t.Fatalf("GetObjectTagging of an untagged object: %v %v", got, err)
	}
	tagged := "tagged"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &tagged, Body: strings.NewReader("d"),
		Tagging: aws.String("team=core&stage=a b")}); err != nil {
		t.Fatal(err)
	}
	goth, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &tagged})
	if err != nil {
		t.Fatal(err)
	}
	goth.Body.Close()
	if aws.ToInt32(goth.TagCount) != 2 {
		t.Fatalf("GetObject TagCount %d", aws.ToInt32(goth.TagCount))
	}
	dst := "copy"
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: &dst, CopySource: aws.String(bucket + "/" + tagged)}); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: &dst})
	if err != nil || len(got.TagSet) != 2 || aws.ToString(got.TagSet[0].Key) != "stage" || aws.ToString(got.TagSet[0].Value) != "a b" {
		t.Fatalf("copied tags: %+v %v", got, err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: &dst, CopySource: aws.String(bucket + "/" + tagged),
		TaggingDirective: types.TaggingDirectiveReplace, Tagging: aws.String("new=1")}); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: &dst})
	if err != nil || len(got.TagSet) != 1 || aws.ToString(got.TagSet[0].Key) != "new" {
		t.Fatalf("replaced tags: %+v %v", got, err)
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &bucket, Key: &src,
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}}); err != nil {
		t.Fatal(err)
	}
	var eleven []types.Tag
	for _, k := range strings.Split("a b c d e f g h i j k", " ") {
		eleven = append(eleven, types.Tag{Key: aws.String(k), Value: aws.String("v")})
	}
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &bucket, Key: &src, Tagging: &types.Tagging{TagSet: eleven}})
	wantStatus(t, "11 tags", err, 400, "BadRequest")
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &bucket, Key: &src,
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String(strings.Repeat("k", 129)), Value: aws.String("v")}}}})
	wantStatus(t, "long key", err, 400, "InvalidTag")
	got, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: &src})
	if err != nil || len(got.TagSet) != 1 {
		t.Fatalf("refused tagging changed the tags: %+v %v", got, err)
	}
	if _, err := c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: &bucket, Key: &src}); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: &src})
	if err != nil || len(got.TagSet) != 0 {
		t.Fatalf("after DeleteObjectTagging: %+v %v", got, err)
	}
}
