package s3api

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
)

// etagOfMD5 is the quoted strong ETag of a single-part object.
func etagOfMD5(sum []byte) string { return `"` + hex.EncodeToString(sum) + `"` }

// multipartETag is "<md5(md5(part1)‖…‖md5(partN))>-N", as S3's. partETags
// are the parts' ETags, quoted or not.
func multipartETag(partETags []string) (string, error) {
	h := md5.New()
	for _, e := range partETags {
		raw, err := hex.DecodeString(unquote(e))
		if err != nil || len(raw) != md5.Size {
			return "", fmt.Errorf("s3api: part etag %q is not an md5", e)
		}
		h.Write(raw)
	}
	return fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(h.Sum(nil)), len(partETags)), nil
}
