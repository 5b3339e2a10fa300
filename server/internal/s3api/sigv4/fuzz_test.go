package sigv4

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// FuzzChunkedReader feeds arbitrary bodies to the aws-chunked decoder (the
// unsigned-trailer mode a client controls entirely). It must never panic,
// never yield more than the declared decoded length, and report every
// failure as an *Error.
func FuzzChunkedReader(f *testing.F) {
	data := "hello world"
	f.Add("b\r\n"+data+"\r\n0\r\nx-amz-checksum-crc32:"+crc32b64([]byte(data))+"\r\n\r\n", 11)
	f.Add("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 11)
	f.Add("0\r\n\r\n", 0)
	f.Add("ffffffffffffffff\r\n", 10)
	f.Add("3;chunk-signature=x\r\nabc\r\n0\r\n", 3)
	f.Fuzz(func(t *testing.T, body string, decoded int) {
		if decoded < 0 || decoded > 1<<20 {
			return
		}
		sums, _ := trailerChecksums([]string{"x-amz-checksum-crc32"})
		if !strings.Contains(body, "x-amz-checksum") {
			sums = &checksums{}
		}
		cr := &chunkedReader{src: io.NopCloser(strings.NewReader(body)), decoded: int64(decoded), maxChunk: 1 << 20,
			trailer: true, time: time.Now(), sums: sums}
		cr.init()
		var out bytes.Buffer
		_, err := io.Copy(&out, io.LimitReader(cr, 2<<20))
		if out.Len() > decoded {
			t.Fatalf("yielded %d bytes, declared %d", out.Len(), decoded)
		}
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
		} else if out.Len() != decoded {
			t.Fatalf("clean EOF after %d bytes, declared %d", out.Len(), decoded)
		}
	})
}
