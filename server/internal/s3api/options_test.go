package s3api

import (
	"testing"

	"github.com/latchkey/latchkey/server/internal/enginetest"
)

// TestOptionsDefaultsAndNegatives: nil Options means the defaults, a zero
// field its default, a negative one an error from New.
func TestOptionsDefaultsAndNegatives(t *testing.T) {
	e := enginetest.Open(t)
	h, err := New(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.opts.MinPartSize != DefaultMinPartSize || h.opts.Region != DefaultRegion || h.log == nil {
		t.Fatalf("nil options: %+v", h.opts)
	}
	h, err = New(e, &Options{MinPartSize: 7, Region: "eu-west-1"})
	if err != nil || h.opts.MinPartSize != 7 || h.opts.Region != "eu-west-1" {
		t.Fatalf("given options: %+v, %v", h.opts, err)
	}
	if h, err := New(e, &Options{MinPartSize: -1}); err == nil || h != nil {
		t.Fatalf("negative MinPartSize: %v, %v", h, err)
	}
}
