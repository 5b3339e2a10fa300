package s3store_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/faultproxy"
	"github.com/latchkey/latchkey/store/s3store"
)

// openFaulty is openVia with requests bounded by a short client timeout,
// so that a held request times out and the store's own resolution runs.
func openFaulty(t *testing.T) (via, direct *s3store.Store, proxy *faultproxy.HTTP) {
	t.Helper()
	// A custom *http.Client cannot take a CA bundle; the proxy is plain
	// HTTP on loopback anyway.
	t.Setenv("AWS_CA_BUNDLE", "")
	return openVia(t, &http.Client{Timeout: 300 * time.Millisecond})
}

// An unconditional Put whose request is delivered late, after its caller
// timed out, must not be reported done when the late copy can still land:
// Put A "ok", then Put B ok, then the key holding A again is a history no
// order explains (and, when A's copies share one ETag, an A→B→A the
// If-Match of a reader of A cannot see). Before the fix s3store resent
// the same bytes with the same nonce, reported the resend's success, and
// the late first copy brought back A with A's old ETag.
func TestLateUnconditionalPutIsNotReportedDone(t *testing.T) {
	ctx := context.Background()
	s, direct, proxy := openFaulty(t)
	proxy.Add(faultproxy.Rule{Match: faultproxy.Method("PUT", ""), Action: faultproxy.Late, Times: 1})
	va, err := s.Put(ctx, "k", []byte("A"), store.Unconditional)
	if err == nil {
		t.Logf("Put A reported done at %s", va)
	} else if !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("Put A = %v, want success or ErrUnknownOutcome", err)
	}
	vb, berr := direct.Put(ctx, "k", []byte("B"), store.Unconditional)
	if berr != nil {
		t.Fatal(berr)
	}
	proxy.Land()
	if proxy.Hits(faultproxy.Late) != 1 {
		t.Fatalf("the late fault did not fire")
	}
	e, gerr := direct.Get(ctx, "k")
	if gerr != nil {
		t.Fatal(gerr)
	}
	if string(e.Value) != "A" {
		t.Fatalf("the late copy of Put A did not land (key holds %q at %s, B was %s)", e.Value, e.Version, vb)
	}
	if err == nil {
		t.Errorf("Put A was reported done (version %s) before Put B, yet A is back after B at %s: its late first copy landed after the report", va, e.Version)
		if e.Version == va {
			t.Errorf("and the key is back at the version Put A returned (ABA)")
		}
	}
}

// TestFaultProxy runs every write through a dropped answer and a late
// delivery (faultproxy.CheckWrites) against our server: s3store's own
// resolution must never claim what the server then contradicts.
func TestFaultProxy(t *testing.T) {
	via, direct, proxy := openFaulty(t)
	faultproxy.CheckWrites(t, faultproxy.Writes{Via: via, Direct: direct, Faults: proxy})
}
