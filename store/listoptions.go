package store

import (
	"slices"
	"strings"
)

// Bounded returns a copy of o (nil: the zero options) as a backend serves
// it: a Limit of zero (or less) becomes def, the backend's default page
// size, and one above max becomes max, the largest page it serves (pass
// def for both where the service has one page size, math.MaxInt where
// there is no cap). A backend's List calls it first.
func (o *ListOptions) Bounded(def, max int) ListOptions {
	var r ListOptions
	if o != nil {
		r = *o
	}
	if r.Limit <= 0 {
		r.Limit = def
	}
	r.Limit = min(r.Limit, max)
	return r
}

// PageOf returns the first page of items (in any order, each key once):
// at most limit of them, sorted by key, with Next set to the last one's
// key when more follow. It is the List of a backend that reads every key
// after ListOptions.After at once (limit from Bounded); it sorts items in
// place.
func PageOf(items []Item, limit int) Page {
	slices.SortFunc(items, func(a, b Item) int { return strings.Compare(a.Key, b.Key) })
	var p Page
	if len(items) > limit {
		items = items[:limit]
		p.Next = items[len(items)-1].Key
	}
	p.Items = items
	return p
}
