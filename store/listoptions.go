package store

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
