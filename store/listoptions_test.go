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

func TestPageOf(t *testing.T) {
	items := func(keys ...string) []Item {
		var r []Item
		for _, k := range keys {
			r = append(r, Item{Key: k, Version: Version("v" + k)})
		}
		return r
	}
	for _, c := range []struct {
		in    []Item
		limit int
		keys  string
		next  string
	}{
		{nil, 3, "", ""},
		{items("b", "a"), 3, "ab", ""},
		{items("c", "a", "b"), 3, "abc", ""},
		{items("d", "c", "a", "b"), 3, "abc", "c"},
		{items("b", "a"), 1, "a", "a"},
	} {
		p := PageOf(c.in, c.limit)
		keys := ""
		for _, it := range p.Items {
			keys += it.Key
			if it.Version != Version("v"+it.Key) {
				t.Errorf("item %q has version %q", it.Key, it.Version)
			}
		}
		if keys != c.keys || p.Next != c.next {
			t.Errorf("PageOf(%v, %d) = %q next %q, want %q next %q", c.in, c.limit, keys, p.Next, c.keys, c.next)
		}
	}
}
