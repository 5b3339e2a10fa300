package s3api

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/server/internal/s3api/ssecrypt"
)

// Defaults used where Options leaves a field zero.
const (
	// DefaultRegion is the region GetBucketLocation and HeadBucket report.
	DefaultRegion = "us-east-1"
	// DefaultMinPartSize is AWS's minimum size of every part but the last.
	DefaultMinPartSize = 5 << 20
)

// Options configure the handler. A nil *Options and every zero field mean
// the defaults; negative values are an error. The zero value requires
// authentication (and so, without Auth, refuses every request).
type Options struct {
	// Auth verifies every request when set.
	Auth Authenticator
	// Anonymous serves unsigned requests without authentication (signed
	// requests are still verified when Auth is set). Without Auth and
	// without Anonymous every request gets 403 AccessDenied.
	Anonymous bool
	// Region is reported by GetBucketLocation; "" means DefaultRegion.
	Region string
	// Domain, when set, enables virtual-hosted-style requests
	// (BUCKET.Domain[:port]/KEY) next to path style (see BucketFromHost).
	Domain string
	// MinPartSize is the minimum size of every part but the last in
	// CompleteMultipartUpload; 0 means DefaultMinPartSize (AWS's 5 MiB).
	// Lower it only for tests.
	MinPartSize int64
	// Logger receives internal errors; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock PostObject checks a policy's expiration against;
	// nil means time.Now.
	Now func() time.Time
	// SSE is the master key of server-side encryption (SSE-S3). nil means
	// none: a request for AES256 is answered 501 NotImplemented, and an
	// object sealed earlier cannot be read. New refuses a key other than
	// the one the data directory's sealed objects were written under.
	SSE *ssecrypt.Keyring
}

// withDefaults returns a copy of o (nil allowed) with zero fields set to
// the defaults, or an error naming a negative field.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if err := optcheck.NonNegative(optcheck.Named("MinPartSize", r.MinPartSize)); err != nil {
		return r, fmt.Errorf("s3api: %w", err)
	}
	r.MinPartSize = cmp.Or(r.MinPartSize, DefaultMinPartSize)
	r.Region = cmp.Or(r.Region, DefaultRegion)
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r, nil
}
