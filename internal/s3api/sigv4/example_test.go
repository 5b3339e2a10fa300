package sigv4_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/latchkey/latchkey/internal/s3api/sigv4"
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
