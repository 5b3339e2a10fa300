package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// Bench runs the standard benchmarks of one backend, so that every backend
// is measured the same way:
//
//	func BenchmarkStore(b *testing.B) { storetest.Bench(b, harness()) }
//
// Sub-benchmarks: Put (unconditional, one key), Get, PutIfMatch (a CAS
// chain using each returned version), PutIfAbsent (fresh keys), CASParallel
// (a CAS chain per goroutine, on distinct keys), CASContended (increments
// of one counter by every goroutine, reporting conflicts per op) and
// List100 (one page of 100 keys). Values are 128 bytes.
func Bench(b *testing.B, h Harness) {
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			s := h.New(b)
			if bm.need != nil && !bm.need(s.Capabilities()) {
				b.Skip("backend does not declare " + bm.needs)
			}
			bm.run(b, b.Context(), s)
		})
	}
}

// benchmark is one sub-benchmark of Bench. When need is set, it runs only
// on backends whose capabilities satisfy it (needs names them).
type benchmark struct {
	name  string
	need  func(store.Capabilities) bool
	needs string
	run   func(b *testing.B, ctx context.Context, s store.Store)
}

func needCAS(c store.Capabilities) bool    { return c.CompareAndSwap }
func needCreate(c store.Capabilities) bool { return c.CreateIfAbsent }

var benchmarks = []benchmark{
	{"Put", nil, "", benchPut},
	{"Get", nil, "", benchGet},
	{"PutIfMatch", needCAS, "CompareAndSwap", benchPutIfMatch},
	{"PutIfAbsent", needCreate, "CreateIfAbsent", benchPutIfAbsent},
	{"CASParallel", needCAS, "CompareAndSwap", benchCASParallel},
	{"CASContended", needCAS, "CompareAndSwap", benchCASContended},
	{"List100", nil, "", benchList100},
}

// benchValue is the 128-byte value every benchmark writes.
var benchValue = func() []byte {
	v := make([]byte, 128)
	for i := range v {
		v[i] = byte(i)
	}
	return v
}()

func mustPut(b *testing.B, ctx context.Context, s store.Store, key string, c store.Condition) store.Version {
	b.Helper()
	v, err := s.Put(ctx, key, benchValue, c)
	if err != nil {
		b.Fatalf("Put(%q, %s): %v", key, c, err)
	}
	return v
}

func benchPut(b *testing.B, ctx context.Context, s store.Store) {
	b.SetBytes(int64(len(benchValue)))
	for b.Loop() {
		mustPut(b, ctx, s, "bench/put", store.Unconditional)
	}
}

func benchGet(b *testing.B, ctx context.Context, s store.Store) {
	mustPut(b, ctx, s, "bench/get", store.Unconditional)
	b.SetBytes(int64(len(benchValue)))
	for b.Loop() {
		if _, err := s.Get(ctx, "bench/get"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPutIfMatch(b *testing.B, ctx context.Context, s store.Store) {
	v := mustPut(b, ctx, s, "bench/cas", store.Unconditional)
	for b.Loop() {
		v = mustPut(b, ctx, s, "bench/cas", store.IfMatch(v))
	}
}

func benchPutIfAbsent(b *testing.B, ctx context.Context, s store.Store) {
	i := 0
	for b.Loop() {
		mustPut(b, ctx, s, "bench/new/"+strconv.Itoa(i), store.IfAbsent)
		i++
	}
}

// benchCASParallel runs a CAS chain per goroutine, on distinct keys.
func benchCASParallel(b *testing.B, ctx context.Context, s store.Store) {
	var id atomic.Int64
	var failed atomic.Value
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("bench/par/%d", id.Add(1))
		v, err := s.Put(ctx, key, benchValue, store.Unconditional)
		for err == nil && pb.Next() {
			v, err = s.Put(ctx, key, benchValue, store.IfMatch(v))
		}
		if err != nil {
			failed.Store(err)
		}
	})
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// benchCASContended has every goroutine increment one counter and reports
// the conflicts per successful increment.
func benchCASContended(b *testing.B, ctx context.Context, s store.Store) {
	if _, err := s.Put(ctx, "bench/counter", []byte("0"), store.Unconditional); err != nil {
		b.Fatal(err)
	}
	var conflicts, seed atomic.Int64
	var failed atomic.Value
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(uint64(seed.Add(1)), 3))
		for pb.Next() {
			_, _, c, err := increment(ctx, s, "bench/counter", rng)
			conflicts.Add(int64(c))
			if err != nil {
				failed.Store(err)
				return
			}
		}
	})
	if err, _ := failed.Load().(error); err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/op")
}

func benchList100(b *testing.B, ctx context.Context, s store.Store) {
	for i := range 100 {
		mustPut(b, ctx, s, fmt.Sprintf("bench/list/%03d", i), store.Unconditional)
	}
	for b.Loop() {
		p, err := s.List(ctx, "bench/list/", &store.ListOptions{Limit: 100})
		if err != nil || len(p.Items) != 100 {
			b.Fatalf("List: %d items, %v", len(p.Items), err)
		}
	}
}
