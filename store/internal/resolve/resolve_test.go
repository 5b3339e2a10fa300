package resolve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/store"
)

var errBoom = errors.New("boom")

func opErr(op, key string, f Failure, cause error) *store.OpError {
	return f.OpError("fake", op, key, cause)
}

// fake is a key whose holder and the outcomes of resends are scripted.
type fake struct {
	held    []Stored // what successive looks see; the last repeats; empty: absent
	looks   int
	sends   []error // what successive resends return; nil is success
	sent    int
	lookErr error
}

func (k *fake) look(ctx context.Context, key string) (Stored, bool, error) {
	k.looks++
	if k.lookErr != nil {
		return Stored{}, false, k.lookErr
	}
	if len(k.held) == 0 {
		return Stored{}, false, nil
	}
	i := min(k.looks-1, len(k.held)-1)
	return k.held[i], true, nil
}

func kindOf(err error) Failure {
	switch {
	case errors.Is(err, store.ErrConflict):
		return Failure{Kind: store.ErrConflict, Status: 412}
	case errors.Is(err, store.ErrTransient):
		return Failure{Kind: store.ErrTransient, Status: 503}
	default:
		return Failure{Kind: store.ErrUnknownOutcome, Status: 500}
	}
}

func (k *fake) send() (store.Version, Failure, error) {
	k.sent++
	err := k.sends[min(k.sent-1, len(k.sends)-1)]
	if err == nil {
		return "v-resent", Failure{}, nil
	}
	return "", kindOf(err), err
}

// put and del are send as the request closures SendPut and SendDelete
// take (their errors sorted by classify).
func (k *fake) put() (store.Version, error) { v, _, err := k.send(); return v, err }
func (k *fake) del() error                  { _, _, err := k.send(); return err }

func classify(_ OpKind, err error) Failure {
	if ce, ok := err.(*codeErr); ok {
		return ce.f
	}
	return kindOf(err)
}

func (k *fake) resolver(attempts int) *Resolver {
	return &Resolver{Attempts: attempts, Backoff: 100 * time.Millisecond, Err: opErr, Look: k.look, Classify: classify}
}

var first = Failure{Kind: store.ErrUnknownOutcome, Status: 500}

func TestPut(t *testing.T) {
	lost := fmt.Errorf("500: %w", store.ErrUnknownOutcome)
	conflict := fmt.Errorf("412: %w", store.ErrConflict)
	ours := Stored{Nonce: "n1", Version: "v-ours"}
	theirs := Stored{Nonce: "n2", Version: "v-theirs"}
	cases := []struct {
		name       string
		k          fake
		want       store.Version
		wantKind   error
		sent       int
		wantStatus int
	}{
		{name: "win on first look", k: fake{held: []Stored{ours}}, want: "v-ours"},
		{name: "win after resend", k: fake{sends: []error{nil}}, want: "v-resent", sent: 1},
		{name: "resend lost then wins", k: fake{sends: []error{lost, nil}}, want: "v-resent", sent: 2},
		{name: "resend 412 sees our own write", k: fake{held: []Stored{theirs, ours}, sends: []error{conflict}}, want: "v-ours", sent: 1},
		{name: "resend 412 with someone else's nonce", k: fake{held: []Stored{theirs}, sends: []error{conflict}},
			wantKind: store.ErrUnknownOutcome, sent: 1, wantStatus: 412},
		{name: "resend 412 and key gone", k: fake{sends: []error{conflict}}, wantKind: store.ErrUnknownOutcome, sent: 1, wantStatus: 412},
		{name: "resend 412 then look fails", k: fake{sends: []error{conflict}, lookErr: errBoom}, wantKind: store.ErrUnknownOutcome, sent: 1, wantStatus: 412},
		{name: "attempts exhausted", k: fake{sends: []error{lost}}, wantKind: store.ErrUnknownOutcome, sent: 3, wantStatus: 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := c.k.resolver(3)
				v, err := r.Put(t.Context(), "jobs/a", "n1", true, c.k.send, first, errors.New("first attempt timed out"))
				if c.wantKind == nil {
					if err != nil || v != c.want {
						t.Fatalf("Put = %q, %v; want %q", v, err, c.want)
					}
				} else {
					var oe *store.OpError
					if !errors.Is(err, c.wantKind) || !errors.As(err, &oe) || oe.Status != c.wantStatus || oe.Op != "put" || oe.Key != "jobs/a" {
						t.Fatalf("Put = %q, %v; want kind %v status %d", v, err, c.wantKind, c.wantStatus)
					}
					if oe.Kind != c.wantKind {
						t.Fatalf("Put error kind %v, want %v (an earlier attempt may have won)", oe.Kind, c.wantKind)
					}
				}
				if c.k.sent != c.sent {
					t.Fatalf("resent %d times, want %d", c.k.sent, c.sent)
				}
			})
		})
	}
}

func TestPutExhaustedMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := fake{sends: []error{fmt.Errorf("500: %w", store.ErrUnknownOutcome)}}
		_, err := k.resolver(2).Put(t.Context(), "k", "n1", true, k.send, first, errors.New("first"))
		if !strings.Contains(err.Error(), "unresolved after 2 resends") {
			t.Fatalf("error %q does not say how many resends", err)
		}
	})
}

func TestPutContextCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := fake{sends: []error{nil}}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		first := errors.New("first attempt timed out")
		_, err := k.resolver(3).Put(ctx, "k", "n1", true, k.send, Failure{Kind: store.ErrUnknownOutcome, Status: 503}, first)
		if !errors.Is(err, store.ErrUnknownOutcome) || !errors.Is(err, context.Canceled) || !errors.Is(err, first) {
			t.Fatalf("Put = %v; want unknown outcome keeping the first error and context.Canceled", err)
		}
		if k.sent != 0 || k.looks != 0 {
			t.Fatalf("sent %d, looked %d after the context ended", k.sent, k.looks)
		}
	})
}

func TestKeepCauses(t *testing.T) {
	e1, e2 := fmt.Errorf("e1: %w", store.ErrTransient), fmt.Errorf("e2: %w", store.ErrUnknownOutcome)
	for _, keep := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			k := fake{sends: []error{e1, e2}}
			r := k.resolver(2)
			r.KeepCauses = keep
			r.Again = func(kind error) bool { return kind == store.ErrUnknownOutcome || kind == store.ErrTransient }
			_, err := r.Put(t.Context(), "k", "n1", true, k.send, first, errors.New("first"))
			if !errors.Is(err, store.ErrUnknownOutcome) || !errors.Is(err, e2) || errors.Is(err, e1) != keep {
				t.Fatalf("KeepCauses=%v: Put = %v", keep, err)
			}
			if k.sent != 2 {
				t.Fatalf("transient resend not resent again: sent %d", k.sent)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	lost := fmt.Errorf("500: %w", store.ErrUnknownOutcome)
	conflict := fmt.Errorf("412: %w", store.ErrConflict)
	transient := fmt.Errorf("503: %w", store.ErrTransient)
	cases := []struct {
		name        string
		conditional bool
		sends       []error
		wantKind    error
		sent        int
	}{
		{name: "resend succeeds", conditional: true, sends: []error{lost, nil}, sent: 2},
		{name: "conditional conflict stays unknown", conditional: true, sends: []error{conflict}, wantKind: store.ErrUnknownOutcome, sent: 1},
		{name: "other failure is returned as is", conditional: true, sends: []error{transient}, wantKind: store.ErrTransient, sent: 1},
		{name: "attempts exhausted", conditional: true, sends: []error{lost}, wantKind: store.ErrUnknownOutcome, sent: 3},
		// A late first copy could delete a later write after a resend
		// was reported done.
		{name: "unconditional is not resent", sends: []error{nil}, wantKind: store.ErrUnknownOutcome, sent: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := fake{sends: c.sends}
				send := func() (Failure, error) { _, f, err := k.send(); return f, err }
				err := k.resolver(3).Delete(t.Context(), "jobs/a", c.conditional, send, first, errors.New("first"))
				if c.wantKind == nil && err != nil || c.wantKind != nil && !errors.Is(err, c.wantKind) {
					t.Fatalf("Delete = %v, want kind %v", err, c.wantKind)
				}
				if k.sent != c.sent {
					t.Fatalf("sent %d, want %d", k.sent, c.sent)
				}
			})
		})
	}
}

func TestPauseBounds(t *testing.T) {
	cases := []struct {
		backoff time.Duration
		n       int
		max     time.Duration
	}{
		{100 * time.Millisecond, 0, 100 * time.Millisecond},
		{100 * time.Millisecond, 2, 400 * time.Millisecond},
		{100 * time.Millisecond, 10, MaxDelay}, // capped
		{100 * time.Millisecond, 62, MaxDelay}, // overflowed shift
		{time.Second, 1, MaxDelay},             // exactly the cap
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			for range 50 {
				start := time.Now()
				if err := Pause(t.Context(), c.backoff, c.n); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d <= 0 || d > c.max {
					t.Fatalf("Pause(%v, %d) slept %v, want in (0, %v]", c.backoff, c.n, d, c.max)
				}
			}
		})
	}
}

func TestPauseJitters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := map[time.Duration]bool{}
		for range 20 {
			start := time.Now()
			if err := Pause(t.Context(), time.Second, 0); err != nil {
				t.Fatal(err)
			}
			seen[time.Since(start)] = true
		}
		if len(seen) < 2 {
			t.Fatalf("20 pauses all slept the same %v", seen)
		}
	})
}

func TestPauseContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := Pause(ctx, time.Hour, 0) // capped at MaxDelay, far beyond the deadline
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Pause = %v, want the context's error", err)
		}
		if d := time.Since(start); d != 10*time.Millisecond {
			t.Fatalf("Pause returned after %v, want at the 10ms deadline", d)
		}
	})
}

func TestNeverSent(t *testing.T) {
	dial := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Err: errors.New("connection reset")}
	cases := []struct {
		err  error
		want bool
	}{
		{dial, true},
		{fmt.Errorf("wrapped: %w", dial), true},
		{read, false},
		{errors.Join(dial, context.DeadlineExceeded), false},
		{errors.Join(dial, context.Canceled), false},
		{errBoom, false},
	}
	for _, c := range cases {
		if got := NeverSent(c.err); got != c.want {
			t.Errorf("NeverSent(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestFallback(t *testing.T) {
	dial := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	cases := []struct {
		status int
		write  bool
		err    error
		want   error
	}{
		{403, true, errBoom, store.ErrUnsupported},
		{400, false, errBoom, store.ErrUnsupported},
		{304, false, errBoom, store.ErrTransient},
		{304, true, errBoom, store.ErrUnknownOutcome},
		{408, false, errBoom, store.ErrTransient},
		{429, true, errBoom, store.ErrUnknownOutcome},
		{503, false, errBoom, store.ErrTransient},
		{500, true, errBoom, store.ErrUnknownOutcome},
		{0, true, dial, store.ErrTransient},
		{0, false, context.DeadlineExceeded, store.ErrTransient},
		{0, true, context.DeadlineExceeded, store.ErrUnknownOutcome},
		{0, true, errors.Join(dial, context.Canceled), store.ErrUnknownOutcome},
	}
	for _, c := range cases {
		if got := Fallback(c.status, c.write, c.err); got != c.want {
			t.Errorf("Fallback(%d, %v, %v) = %v, want %v", c.status, c.write, c.err, got, c.want)
		}
	}
}

// Settle never resends: our nonce seen (on any look) wins, anything else
// after Attempts looks is ErrUnknownOutcome with the first failure kept.
func TestSettle(t *testing.T) {
	ours := Stored{Nonce: "n1", Version: "v-ours"}
	theirs := Stored{Nonce: "n2", Version: "v-theirs"}
	cases := []struct {
		name  string
		k     fake
		want  store.Version
		looks int
	}{
		{name: "seen on first look", k: fake{held: []Stored{ours}}, want: "v-ours", looks: 1},
		{name: "seen on a later look", k: fake{held: []Stored{theirs, theirs, ours}}, want: "v-ours", looks: 3},
		{name: "someone else's object", k: fake{held: []Stored{theirs}}, looks: 3},
		{name: "absent", k: fake{}, looks: 3},
		{name: "looks Failure", k: fake{lookErr: errBoom}, looks: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				v, err := c.k.resolver(3).Settle(t.Context(), "jobs/a", "n1", first, errors.New("first attempt timed out"))
				var oe *store.OpError
				switch {
				case c.want != "" && (err != nil || v != c.want):
					t.Fatalf("Settle = %q, %v; want %q", v, err, c.want)
				case c.want == "" && (!errors.As(err, &oe) || oe.Kind != store.ErrUnknownOutcome || oe.Status != 500):
					t.Fatalf("Settle = %q, %v; want ErrUnknownOutcome with status 500", v, err)
				}
				if c.k.sent != 0 || c.k.looks != c.looks {
					t.Fatalf("sent %d, looked %d times; want 0 and %d", c.k.sent, c.k.looks, c.looks)
				}
			})
		})
	}
}

// An unconditional Put is settled by looking only: never resent.
func TestPutUnconditionalIsNotResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := fake{sends: []error{nil}}
		_, err := k.resolver(3).Put(t.Context(), "k", "n1", false, k.send, first, errors.New("first"))
		if !errors.Is(err, store.ErrUnknownOutcome) || k.sent != 0 || k.looks != 3 {
			t.Fatalf("Put = %v after %d resends and %d looks; want ErrUnknownOutcome, 0 resends, 3 looks", err, k.sent, k.looks)
		}
	})
}

func TestOpKind(t *testing.T) {
	cases := []struct {
		k                  OpKind
		write, conditional bool
	}{
		{OpRead, false, false},
		{OpWrite, true, false},
		{OpCondPut, true, true},
		{OpCondDelete, true, true},
	}
	for _, c := range cases {
		if c.k.Write() != c.write || c.k.Conditional() != c.conditional {
			t.Errorf("OpKind %d: Write %v Conditional %v, want %v %v", c.k, c.k.Write(), c.k.Conditional(), c.write, c.conditional)
		}
	}
}

func TestFailureOpError(t *testing.T) {
	f := Failure{Kind: store.ErrConflict, Status: 412, Code: "PreconditionFailed"}
	err := f.OpError("s3store", "put", "jobs/a", errBoom)
	if got, want := err.Error(), `s3store: put "jobs/a": precondition failed (status 412 PreconditionFailed): boom`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, store.ErrConflict) || !errors.Is(err, errBoom) {
		t.Errorf("%v does not match both its kind and its cause", err)
	}
}

// TestSendOnceThenResolve: SendPut and SendDelete return the first
// answer, report a failure of known outcome as it is without resending,
// and resolve only an unknown one.
func TestSendOnceThenResolve(t *testing.T) {
	lost := fmt.Errorf("500: %w", store.ErrUnknownOutcome)
	conflict := fmt.Errorf("412: %w", store.ErrConflict)
	for _, c := range []struct {
		name     string
		sends    []error
		wantKind error
		sent     int
	}{
		{name: "answered", sends: []error{nil}, sent: 1},
		{name: "known failure", sends: []error{conflict}, wantKind: store.ErrConflict, sent: 1},
		{name: "unknown, then the resend wins", sends: []error{lost, nil}, sent: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := fake{sends: c.sends}
				_, err := k.resolver(3).SendPut(t.Context(), "jobs/a", "n1", OpCondPut, store.IfMatch("v1"), k.put)
				if c.wantKind == nil && err != nil || c.wantKind != nil && !errors.Is(err, c.wantKind) {
					t.Fatalf("SendPut = %v, want kind %v", err, c.wantKind)
				}
				d := fake{sends: c.sends}
				err = d.resolver(3).SendDelete(t.Context(), "jobs/a", OpCondDelete, d.del)
				if c.wantKind == nil && err != nil || c.wantKind != nil && !errors.Is(err, c.wantKind) {
					t.Fatalf("SendDelete = %v, want kind %v", err, c.wantKind)
				}
				if k.sent != c.sent || d.sent != c.sent {
					t.Fatalf("sent %d (put) and %d (delete), want %d", k.sent, d.sent, c.sent)
				}
			})
		})
	}
}

// TestSendDeleteMissing: an unconditional delete of a missing key
// succeeds, one whose bucket is missing (NoBucket) fails, and a
// conditional delete of a missing key is the backend's classification.
func TestSendDeleteMissing(t *testing.T) {
	noKey := &codeErr{Failure{Kind: store.ErrNotFound, Status: 404, Code: "NoSuchKey"}}
	noBucket := &codeErr{Failure{Kind: store.ErrNotFound, Status: 404, Code: "NoSuchBucket"}}
	for _, c := range []struct {
		name     string
		noBucket string
		kind     OpKind
		err      error
		wantKind error
	}{
		{name: "missing key", noBucket: "NoSuchBucket", kind: OpWrite, err: noKey},
		{name: "missing bucket", noBucket: "NoSuchBucket", kind: OpWrite, err: noBucket, wantKind: store.ErrNotFound},
		{name: "no bucket code: every 404 is the key's", kind: OpWrite, err: noBucket},
		{name: "conditional", noBucket: "NoSuchBucket", kind: OpCondDelete, err: noKey, wantKind: store.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := fake{}
			r := k.resolver(3)
			r.NoBucket = c.noBucket
			err := r.SendDelete(t.Context(), "jobs/a", c.kind, func() error { return c.err })
			if c.wantKind == nil && err != nil || c.wantKind != nil && !errors.Is(err, c.wantKind) {
				t.Fatalf("SendDelete = %v, want kind %v", err, c.wantKind)
			}
		})
	}
}

// codeErr is an error whose classification is the Failure it carries.
type codeErr struct{ f Failure }

func (e *codeErr) Error() string { return fmt.Sprintf("%d %s", e.f.Status, e.f.Code) }

func TestNewNonceIsFreshHex(t *testing.T) {
	a, b := NewNonce(), NewNonce()
	if a == b || len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("NewNonce = %q, %q; want two different 32-digit hex strings", a, b)
	}
}

// TestMissing: a 404 is ErrNotFound when the bucket is missing or the
// request is a read or unconditional write, and a conditional request's
// condition failing (ErrConflict) otherwise.
func TestMissing(t *testing.T) {
	cases := []struct {
		op     OpKind
		bucket bool
		want   error
	}{
		{OpRead, false, store.ErrNotFound},
		{OpWrite, false, store.ErrNotFound},
		{OpCondPut, false, store.ErrConflict},
		{OpCondDelete, false, store.ErrConflict},
		{OpRead, true, store.ErrNotFound},
		{OpCondPut, true, store.ErrNotFound},
		{OpCondDelete, true, store.ErrNotFound},
	}
	for _, c := range cases {
		if got := Missing(c.op, c.bucket); got != c.want {
			t.Errorf("Missing(%d, bucket %v) = %v, want %v", c.op, c.bucket, got, c.want)
		}
	}
}
