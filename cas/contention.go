package cas

import (
	"hash/maphash"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/store"
)

// Contention memory: what one Update learned about how far apart a key's
// contenders must spread, kept for the next Update of the same key.
//
// Exponential backoff that starts from BaseDelay in every Update has to
// find the contention level again each time: with N writers on one key,
// each Update loses about log2(N·round/BaseDelay) races before its
// retries are spread wide enough, and every lost race is a read and a
// write the store serves for nothing, on the same CPUs and the same
// commit rounds as the write that wins. Measured on latchkey serve (64
// goroutines, one key, BenchmarkUpdateContended in tests/casbench): 5–9
// attempts per update, about half of the requests on fresh TCP
// connections, commit rounds stretched 3–10× by the losers' requests.
// With the memory the next contended Update starts where the last one
// ended: 2–4 attempts.
//
// The memory is a small fixed table, indexed by a hash of the key and
// matched on the store (the same store.Store value, compared with ==) and
// the key, so distinct stores never share what they learned. An entry is
// only a starting ceiling for the backoff: it never delays a first attempt
// (an uncontended Update pays nothing), it is capped by each Update's own
// MaxDelay, and it expires. An entry holds its store value until it is
// replaced by another key hashing to its slot or expires and is cleared.
const (
	memorySlots = 64
	// memoryTTL is how long an entry stays valid after it was last
	// recorded, at least; entries above memoryTTL/4 stay valid for four
	// times their ceiling, so that a wide spread survives its own sleeps.
	memoryTTL = time.Second
)

type memoryEntry struct {
	s       store.Store
	key     string
	ceiling time.Duration
	at      time.Time
}

var (
	memory     [memorySlots]atomic.Pointer[memoryEntry]
	memorySeed = maphash.MakeSeed()
)

// remembers reports whether s can have a memory: its dynamic type must be
// comparable for == to match entries (a store that is a struct holding a
// map, say, is not; it simply gets none). Only remember checks it: every
// entry holds a comparable store, and == between interfaces compares
// values only when their dynamic types are the same, so recalled cannot
// panic whatever store it is given.
func remembers(s store.Store) bool {
	t := reflect.TypeOf(s)
	return t != nil && t.Comparable()
}

func memorySlot(key string) *atomic.Pointer[memoryEntry] {
	return &memory[maphash.String(memorySeed, key)%memorySlots]
}

// recalled returns the remembered starting ceiling for s and key, 0 if
// none is valid at now.
func recalled(s store.Store, key string, now time.Time) time.Duration {
	slot := memorySlot(key)
	m := slot.Load()
	if m == nil || m.s != s || m.key != key {
		return 0
	}
	switch age := now.Sub(m.at); {
	case age < 0: // recorded after now (another caller's later clock reading)
		return 0
	case age > max(memoryTTL, 4*m.ceiling):
		slot.CompareAndSwap(m, nil) // let go of the store
		return 0
	}
	return m.ceiling
}

// remember records c as the starting ceiling for s and key (0 forgets).
func remember(s store.Store, key string, c time.Duration, now time.Time) {
	if !remembers(s) {
		return
	}
	slot := memorySlot(key)
	if c <= 0 {
		if m := slot.Load(); m != nil && m.s == s && m.key == key {
			slot.CompareAndSwap(m, nil)
		}
		return
	}
	slot.Store(&memoryEntry{s: s, key: key, ceiling: c, at: now})
}
