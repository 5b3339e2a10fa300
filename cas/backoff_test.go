package cas

import (
	"testing"
	"time"
)

func TestBackoffCeilingDoublesUpToTheCap(t *testing.T) {
	base, limit := 2*time.Millisecond, 50*time.Millisecond
	want := []time.Duration{2, 4, 8, 16, 32, 50, 50, 50}
	for i, w := range want {
		if got := (Options{BaseDelay: base, MaxDelay: limit}).policy().Ceiling(i + 1); got != w*time.Millisecond {
			t.Errorf("ceiling(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	if got := (Options{BaseDelay: base, MaxDelay: limit}).policy().Ceiling(1 << 30); got != limit {
		t.Errorf("ceiling(2^30) = %v, want the cap %v", got, limit)
	}
}

func TestBackoffIsFullJitterUnderTheCeiling(t *testing.T) {
	const draws = 2000
	base, limit := time.Millisecond, 8*time.Millisecond
	for n := 1; n <= 6; n++ {
		p := Options{BaseDelay: base, MaxDelay: limit}.policy()
		c := p.Ceiling(n)
		var sum, lo, hi time.Duration = 0, c, 0
		for range draws {
			d := p.Delay(n)
			if d < 0 || d >= c {
				t.Fatalf("backoff(%d) = %v, outside [0, %v)", n, d, c)
			}
			sum += d
			lo, hi = min(lo, d), max(hi, d)
		}
		// Uniform on [0, c): the mean is near c/2, and draws reach both ends.
		mean := sum / draws
		if mean < c*4/10 || mean > c*6/10 || lo > c/10 || hi < c*9/10 {
			t.Errorf("backoff(%d): mean %v, range [%v, %v]; want uniform on [0, %v)", n, mean, lo, hi, c)
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	o, err := (*Options)(nil).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxAttempts != DefaultMaxAttempts || o.TransientBudget != DefaultTransientBudget ||
		o.BaseDelay != DefaultBaseDelay || o.MaxDelay != DefaultMaxDelay || o.Timeout != 0 {
		t.Fatalf("defaults = %+v", o)
	}
	o, _ = (&Options{BaseDelay: time.Second, MaxDelay: time.Millisecond}).withDefaults()
	if o.BaseDelay != time.Millisecond {
		t.Fatalf("BaseDelay above MaxDelay not capped: %+v", o)
	}
}
