// Package hdrval hands out HTTP header values made per request (a request
// id, an X-Consul-Index) without an allocation of their own: each value's
// text and its one-element []string are carved from a slab shared by the
// next few dozen values, so a request costs a small share of one
// allocation instead of two (the string, the slice), and the garbage
// collector sees one object where it saw dozens.
//
// A value is safe to keep for as long as anything needs it: a slab's text
// is only ever appended to (strings.Builder never changes the bytes it has
// handed out as a string) and each slot of a slab is handed out once; a
// slab is freed when the last value cut from it is dropped. The slices
// have length and capacity 1, so Header.Add on one appends to a copy, as
// with a value made by Header.Set. It imports the standard library only.
package hdrval

import (
	"strconv"
	"strings"
	"sync"
)

// perSlab is how many values a slab holds. A slab is about 1 KiB, kept
// alive while any of its values is (a response waiting to be written, a
// blocking query): a few dozen values share that cost.
const perSlab = 32

// maxText is the longest value a slab's text holds: a uint64 in decimal
// (20 digits) or 16 hex digits.
const maxText = 20

type slab struct {
	text strings.Builder // Grow(perSlab*maxText) once: never reallocated
	vals [perSlab][]string
	all  [perSlab]string
	n    int
}

func newSlab() *slab {
	s := &slab{}
	s.text.Grow(perSlab * maxText)
	for i := range s.vals {
		s.vals[i] = s.all[i : i+1 : i+1]
	}
	return s
}

// Slabs hands out values; the zero value is ready. It is safe for
// concurrent use: each goroutine takes values from a slab of its own
// (sync.Pool keeps one per P), so it costs no lock.
type Slabs struct {
	pool sync.Pool
}

// put copies text (at most maxText bytes) into a slab and returns it as
// a header value.
func (p *Slabs) put(text []byte) []string {
	s, _ := p.pool.Get().(*slab)
	if s == nil || s.n == perSlab {
		s = newSlab()
	}
	start := s.text.Len()
	s.text.Write(text)
	v := s.vals[s.n]
	v[0] = s.text.String()[start:]
	s.n++
	p.pool.Put(s)
	return v
}

// Uint is v in decimal, as strconv.FormatUint(v, 10).
func (p *Slabs) Uint(v uint64) []string {
	var buf [maxText]byte
	return p.put(strconv.AppendUint(buf[:0], v, 10))
}

// Hex64 is v as 16 lower-case hex digits, leading zeros kept.
func (p *Slabs) Hex64(v uint64) []string {
	const digits = "0123456789abcdef"
	var buf [16]byte
	for i := range buf {
		buf[i] = digits[(v>>(60-4*uint(i)))&0xf]
	}
	return p.put(buf[:])
}
