package s3interop

import (
	_ "embed"
	"testing"

	"github.com/latchkey/latchkey/server/servertest"
)

//go:embed testdata/boto3_post.py
var boto3PostScript []byte

// TestBoto3PostObject is issue 24 item 4: browser form uploads
// (PostObject) built by boto3's generate_presigned_post and posted as a
// browser posts them. Success answers (204, 201 with XML, 303 redirect),
// ${filename}, stored Content-Type and metadata, and the refusals with
// AWS's codes and messages: content-length-range, a failed condition, an
// extra field, an expired or tampered policy, a field after the file, a
// body that is not multipart/form-data. Nothing refused is stored.
func TestBoto3PostObject(t *testing.T) {
	py := boto3Python(t)
	srv := servertest.Start(t, nil)
	runCheckScript(t, py, "boto3_post.py", boto3PostScript, 12, srv.URL, srv.AccessKey, srv.SecretKey)
}
