package powerfs

import "strconv"

// Survived reports whether got, the value key holds after a cut and a
// restart (nil: absent), is one it may hold: the value of its last
// acknowledged write in acked (nil: an acknowledged delete; a key missing
// from acked was never acknowledged, so absent), or the value of the
// write in flight at the cut, when inflight has the key.
func Survived(got *string, key string, acked, inflight map[string]*string) bool {
	if same(got, acked[key]) {
		return true
	}
	f, in := inflight[key]
	return in && same(got, f)
}

func same(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// Show renders a value for a failure message: "absent" for nil, else
// quoted and cut after 20 bytes.
func Show(v *string) string {
	switch {
	case v == nil:
		return "absent"
	case len(*v) > 20:
		return strconv.Quote((*v)[:20]) + "…"
	}
	return strconv.Quote(*v)
}
