package s3api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api"
)

// Create-if-absent over plain HTTP: the second If-None-Match: * PUT of a key
// loses with 412.
func Example() {
	dir, _ := os.MkdirTemp("", "s3api-example")
	defer os.RemoveAll(dir)
	e, err := engine.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	h, err := s3api.New(e, &s3api.Options{Anonymous: true})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	do := func(method, path, body string, hdr ...string) int {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	fmt.Println(do("PUT", "/locks", ""))
	fmt.Println(do("PUT", "/locks/job-1", "holder=a", "If-None-Match", "*"))
	fmt.Println(do("PUT", "/locks/job-1", "holder=b", "If-None-Match", "*"))
	// Output:
	// 200
	// 200
	// 412
}
