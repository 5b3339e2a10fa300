package sigv4_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// The S3 handler calls Verify first and reads the returned body, never
// r.Body; a failure found while streaming arrives instead of io.EOF.
func ExampleVerifier_Verify() {
	v := sigv4.New(sigv4.Credentials{"AKID": "secret"}.Lookup, nil)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, body, err := v.Verify(r)
		if err == nil {
			defer body.Close()
			_, err = io.Copy(io.Discard, body) // stream to a temp file; publish only on success
		}
		var se *sigv4.Error
		if errors.As(err, &se) {
			http.Error(w, se.Code, se.Status) // the real handler writes S3's XML error
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/bucket/key", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output: 403 AccessDenied
}

// An anonymous server decodes unsigned aws-chunked bodies (what SDKs with
// anonymous credentials send over https) with Dechunk; the trailing
// checksum is verified before io.EOF.
func ExampleDechunk() {
	body := "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"
	r := httptest.NewRequest("PUT", "/bucket/key", strings.NewReader(body))
	r.Header.Set("X-Amz-Content-Sha256", sigv4.StreamingUnsignedTrailer)
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Decoded-Content-Length", "5")
	r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32")
	if !sigv4.Signed(r) {
		dec, err := sigv4.Dechunk(r)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer dec.Close()
		data, err := io.ReadAll(dec)
		fmt.Println(string(data), r.ContentLength, err)
	}
	// Output: hello 5 <nil>
}
