package store

import "testing"

func TestListOptionsBounded(t *testing.T) {
	for _, c := range []struct {
		opts *ListOptions
		want ListOptions
	}{
		{nil, ListOptions{Limit: 100}},
		{&ListOptions{After: "a"}, ListOptions{After: "a", Limit: 100}},
		{&ListOptions{Limit: -3}, ListOptions{Limit: 100}},
		{&ListOptions{Limit: 7}, ListOptions{Limit: 7}},
		{&ListOptions{Limit: 5000, After: "b"}, ListOptions{Limit: 1000, After: "b"}},
	} {
		if got := c.opts.Bounded(100, 1000); got != c.want {
			t.Errorf("%+v.Bounded(100, 1000) = %+v, want %+v", c.opts, got, c.want)
		}
	}
	o := &ListOptions{Limit: 0}
	o.Bounded(100, 1000)
	if o.Limit != 0 {
		t.Errorf("Bounded changed its receiver: Limit %d", o.Limit)
	}
}
