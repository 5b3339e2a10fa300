package s3api

import (
	"strconv"
	"strings"
)

// byteRange is an inclusive range [Start, End] of an object.
type byteRange struct{ Start, End int64 }

func (r byteRange) length() int64 { return r.End - r.Start + 1 }

// parseRange interprets a Range header against an object of size bytes.
// It returns ok=false when the header is to be ignored (absent, not a
// bytes range, syntactically invalid or a multi-range: S3 then serves the
// whole object) and an InvalidRange error when it is valid but not
// satisfiable.
func parseRange(h string, size int64) (byteRange, bool, *Error) {
	h = strings.TrimSpace(h)
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return byteRange{}, false, nil
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return byteRange{}, false, nil
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if first == "" {
		// Suffix range: the last n bytes.
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return byteRange{}, false, nil
		}
		if n == 0 || size == 0 {
			return byteRange{}, false, errInvalidRange(size)
		}
		n = min(n, size)
		return byteRange{size - n, size - 1}, true, nil
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 {
		return byteRange{}, false, nil
	}
	end := size - 1
	if last != "" {
		end, err = strconv.ParseInt(last, 10, 64)
		if err != nil || end < start {
			return byteRange{}, false, nil
		}
		end = min(end, size-1)
	}
	if start >= size {
		return byteRange{}, false, errInvalidRange(size)
	}
	return byteRange{start, end}, true, nil
}
