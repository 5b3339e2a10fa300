package cas_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/memstore"
)

// outage is a store that fails every read and write with
// store.ErrTransient until `until`, as a store does while its leader is
// elected or its server restarts, and then serves them again. It counts
// the failures.
type outage struct {
	store.Store
	until    time.Time
	failures int
}

func newOutage(d time.Duration) *outage {
	return &outage{Store: memstore.New(), until: time.Now().Add(d)}
}

func (o *outage) down() bool {
	if time.Now().Before(o.until) {
		o.failures++
		return true
	}
	return false
}

func (o *outage) Get(ctx context.Context, key string) (store.Entry, error) {
	if o.down() {
		return store.Entry{}, store.NewOpError("outage", "get", key, store.ErrTransient, errors.New("500 no cluster leader"))
	}
	return o.Store.Get(ctx, key)
}

func (o *outage) Put(ctx context.Context, key string, v []byte, c store.Condition) (store.Version, error) {
	if o.down() {
		return "", store.NewOpError("outage", "put", key, store.ErrTransient, errors.New("500 no cluster leader"))
	}
	return o.Store.Put(ctx, key, v, c)
}

// Transient failures are retried, with backoff, until the caller's
// deadline (ctx's or Options.Timeout), however many there are, and
// without one for Options.TransientBudget: a five-second outage (a leader
// election) is ridden out, and the backoff keeps the requests to a few
// per second.
func TestTransientFailuresAreRetriedUntilTheDeadline(t *testing.T) {
	const outageFor = 5 * time.Second
	for _, c := range []struct {
		name string
		ctx  time.Duration // ctx's deadline, 0 for none
		opts *cas.Options
	}{
		{"ctx deadline", 30 * time.Second, nil},
		{"Options.Timeout", 0, &cas.Options{Timeout: 30 * time.Second}},
		{"no deadline, the default budget", 0, nil},
		{"no deadline, a budget", 0, &cas.Options{TransientBudget: 6 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := within(t, c.ctx)
				s := newOutage(outageFor)
				start := time.Now()
				res, err := cas.Update(ctx, s, "k", increment, c.opts)
				el := time.Since(start)
				if err != nil {
					t.Fatalf("Update through a %v outage = %v after %v and %d failures; want it ridden out", outageFor, err, el, s.failures)
				}
				if res.Outcome != cas.Written || el < outageFor || el > outageFor+cas.DefaultMaxDelay {
					t.Errorf("%v after %v, want written within one backoff of the outage's end (%v)", res.Outcome, el, outageFor)
				}
				if per := float64(s.failures) / outageFor.Seconds(); per < 4 || per > 40 {
					t.Errorf("%d failed requests in %v (%.1f/s), want backoff between tries (4–40/s)", s.failures, outageFor, per)
				}
				wantValue(t, s, "1")
			})
		})
	}
}

// An Update that runs out of its deadline, or of TransientBudget, before
// the store recovers returns the last transient error, and says how long
// it tried and how often.
func TestTransientRetriesEndAtTheDeadline(t *testing.T) {
	for _, c := range []struct {
		name  string
		ctx   time.Duration
		opts  *cas.Options
		until time.Duration // when it must have given up
		why   string
	}{
		{"ctx deadline", 3 * time.Second, nil, 3 * time.Second, "ctx's deadline"},
		{"Options.Timeout", 0, &cas.Options{Timeout: 3 * time.Second}, 3 * time.Second, "Options.Timeout"},
		{"TransientBudget", 0, &cas.Options{TransientBudget: 2 * time.Second}, 2 * time.Second, "Options.TransientBudget"},
		{"the default budget", 0, nil, cas.DefaultTransientBudget, "Options.TransientBudget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := within(t, c.ctx)
				s := newOutage(time.Hour)
				start := time.Now()
				_, err := cas.Update(ctx, s, "k", increment, c.opts)
				el := time.Since(start)
				if !errors.Is(err, store.ErrTransient) || errors.Is(err, cas.ErrContended) {
					t.Fatalf("err = %v, want the last transient error", err)
				}
				if el > c.until || el < c.until-cas.DefaultMaxDelay {
					t.Errorf("gave up after %v, want within one backoff before %v", el, c.until)
				}
				m := regexp.MustCompile(`after (\d+) transient failures over ([0-9.]+m?s) \((.*?)\)`).FindStringSubmatch(err.Error())
				if m == nil {
					t.Fatalf("err = %q, want it to say how many failures, over how long, and what ended them", err)
				}
				if n, _ := strconv.Atoi(m[1]); n != s.failures {
					t.Errorf("the error counts %d failures, the store served %d", n, s.failures)
				}
				if d, perr := time.ParseDuration(m[2]); perr != nil || (d-el).Abs() > time.Millisecond {
					t.Errorf("the error says %s, the Update took %v", m[2], el)
				}
				if m[3] != c.why {
					t.Errorf("the error blames %q, want %q", m[3], c.why)
				}
				if _, err := s.Store.Get(context.Background(), "k"); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("k: %v, want it never written", err)
				}
			})
		})
	}
}

// within returns a context with deadline d from now (none when d is 0),
// cancelled when the test ends.
func within(t *testing.T, d time.Duration) context.Context {
	if d == 0 {
		return context.Background()
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
