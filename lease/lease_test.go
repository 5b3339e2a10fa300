package lease_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/lease/leasetest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/filestore"
	"github.com/latchkey/latchkey/store/memstore"
)

func TestMemstore(t *testing.T) {
	leasetest.Run(t, leasetest.Harness{
		New: func(tb testing.TB) store.Store { return memstore.New() },
	})
}

func openFilestore(tb testing.TB) *filestore.Store {
	s, err := filestore.Open(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestFilestore runs the suite on fake time; the directory store's native
// watch (inotify) blocks on real I/O, which a synctest bubble cannot wait
// out, so Acquire polls here.
func TestFilestore(t *testing.T) {
	leasetest.Run(t, leasetest.Harness{
		New: func(tb testing.TB) store.Store { return leasetest.WithoutWatch(openFilestore(tb)) },
	})
}

// TestFilestoreRealTime runs the suite on the real clock with the
// directory store's native watch.
func TestFilestoreRealTime(t *testing.T) {
	leasetest.Run(t, leasetest.Harness{
		New:      func(tb testing.TB) store.Store { return openFilestore(tb) },
		RealTime: true,
	})
}

// TestNewLockerRefusesNegativeOptions: a negative option is an error from
// NewLocker naming the field (Options.NAME), as from every other function
// of latchkey that takes options; zero means the default.
func TestNewLockerRefusesNegativeOptions(t *testing.T) {
	for name, o := range map[string]lease.Options{
		"TTL":             {TTL: -time.Second},
		"Margin":          {Margin: -time.Millisecond},
		"RenewInterval":   {RenewInterval: -time.Millisecond},
		"PollInterval":    {PollInterval: -time.Millisecond},
		"PollBudget":      {PollBudget: -0.5},
		"QueueRetryDelay": {QueueRetryDelay: -time.Millisecond},
	} {
		lk, err := lease.NewLocker(memstore.New(), "k", &o)
		if err == nil || !errors.Is(err, lease.ErrOptions) || !strings.Contains(err.Error(), "Options."+name) {
			t.Errorf("NewLocker with negative %s = %v, %v; want an ErrOptions error naming Options.%s", name, lk, err, name)
		}
	}
	if _, err := lease.NewLocker(memstore.New(), "k", &lease.Options{}); err != nil {
		t.Fatalf("NewLocker with zero options: %v", err)
	}
}

func TestOptions(t *testing.T) {
	def, err := lease.NewLocker(memstore.New(), "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := def.Options()
	if o.TTL != lease.DefaultTTL || o.Margin != o.TTL/5 || o.RenewInterval != (o.TTL-o.Margin)/3 ||
		o.PollInterval != 1500*time.Millisecond || o.Holder == "" || o.Now == nil ||
		o.PollBudget != lease.DefaultPollBudget || o.QueueRetryDelay != lease.DefaultQueueRetryDelay || o.NoQueue {
		t.Errorf("defaults = %+v", o)
	}
	for _, tc := range []struct {
		name string
		o    lease.Options
		ok   bool
	}{
		{"zero", lease.Options{}, true},
		{"short TTL", lease.Options{TTL: time.Millisecond}, false},
		{"negative margin", lease.Options{Margin: -1}, false},
		{"margin half the TTL", lease.Options{TTL: 10 * time.Second, Margin: 5 * time.Second}, false},
		{"renew too slow", lease.Options{TTL: 10 * time.Second, Margin: 2 * time.Second, RenewInterval: 5 * time.Second}, false},
		{"renew at the limit", lease.Options{TTL: 10 * time.Second, Margin: 2 * time.Second, RenewInterval: 4 * time.Second}, true},
		{"poll past TTL", lease.Options{TTL: time.Second, PollInterval: 2 * time.Second}, false},
		{"negative poll", lease.Options{PollInterval: -time.Second}, false},
		{"negative poll budget", lease.Options{PollBudget: -1}, false},
		{"NaN poll budget", lease.Options{PollBudget: math.NaN()}, false},
		{"small poll budget", lease.Options{PollBudget: 0.1}, true},
		{"negative queue retry delay", lease.Options{QueueRetryDelay: -time.Millisecond}, false},
	} {
		err := tc.o.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, lease.ErrOptions)) {
			t.Errorf("%s: Validate = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	if _, err := lease.NewLocker(memstore.New(), "bad//key", nil); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("NewLocker with a bad key: %v", err)
	}
}
