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
	value := make([]byte, 128)
	for i := range value {
		value[i] = byte(i)
	}
	open := func(b *testing.B) (context.Context, store.Store) {
		b.Helper()
		s := h.New(b)
		return b.Context(), s
	}
	mustPut := func(b *testing.B, ctx context.Context, s store.Store, key string, c store.Condition) store.Version {
		v, err := s.Put(ctx, key, value, c)
		if err != nil {
			b.Fatalf("Put(%q, %s): %v", key, c, err)
		}
		return v
	}
	b.Run("Put", func(b *testing.B) {
		ctx, s := open(b)
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			mustPut(b, ctx, s, "bench/put", store.Unconditional)
		}
	})
	b.Run("Get", func(b *testing.B) {
		ctx, s := open(b)
		mustPut(b, ctx, s, "bench/get", store.Unconditional)
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			if _, err := s.Get(ctx, "bench/get"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutIfMatch", func(b *testing.B) {
		ctx, s := open(b)
		if !s.Capabilities().CompareAndSwap {
			b.Skip("backend does not declare CompareAndSwap")
		}
		v := mustPut(b, ctx, s, "bench/cas", store.Unconditional)
		for b.Loop() {
			v = mustPut(b, ctx, s, "bench/cas", store.IfMatch(v))
		}
	})
	b.Run("PutIfAbsent", func(b *testing.B) {
		ctx, s := open(b)
		if !s.Capabilities().CreateIfAbsent {
			b.Skip("backend does not declare CreateIfAbsent")
		}
		i := 0
		for b.Loop() {
			mustPut(b, ctx, s, "bench/new/"+strconv.Itoa(i), store.IfAbsent)
			i++
		}
	})
	b.Run("CASParallel", func(b *testing.B) {
		ctx, s := open(b)
		if !s.Capabilities().CompareAndSwap {
			b.Skip("backend does not declare CompareAndSwap")
		}
		var id atomic.Int64
		var failed atomic.Value
		b.RunParallel(func(pb *testing.PB) {
			key := fmt.Sprintf("bench/par/%d", id.Add(1))
			v, err := s.Put(ctx, key, value, store.Unconditional)
			for err == nil && pb.Next() {
				v, err = s.Put(ctx, key, value, store.IfMatch(v))
			}
			if err != nil {
				failed.Store(err)
			}
		})
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("CASContended", func(b *testing.B) {
		ctx, s := open(b)
		if !s.Capabilities().CompareAndSwap {
			b.Skip("backend does not declare CompareAndSwap")
		}
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
	})
	b.Run("List100", func(b *testing.B) {
		ctx, s := open(b)
		for i := range 100 {
			mustPut(b, ctx, s, fmt.Sprintf("bench/list/%03d", i), store.Unconditional)
		}
		for b.Loop() {
			p, err := s.List(ctx, "bench/list/", &store.ListOptions{Limit: 100})
			if err != nil || len(p.Items) != 100 {
				b.Fatalf("List: %d items, %v", len(p.Items), err)
			}
		}
	})
}
