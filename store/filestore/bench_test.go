package filestore

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/latchkey/latchkey/store"
)

// Benchmarks run with fsync ("sync") and without ("nosync", a test-only
// switch) so that the cost of durability is visible next to the rest.
func benchStores(b *testing.B, f func(b *testing.B, s *Store)) {
	for _, mode := range []string{"sync", "nosync"} {
		b.Run(mode, func(b *testing.B) {
			s := open(b, b.TempDir(), nil)
			s.noSync = mode == "nosync"
			f(b, s)
		})
	}
}

var value = []byte("a small value of about forty-two bytes....")

func BenchmarkPut(b *testing.B) {
	benchStores(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		b.Run("sequential", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := s.Put(ctx, "seq/"+strconv.Itoa(i%100), value, store.Unconditional); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parallel", func(b *testing.B) { putInParallel(b, s, "par/") })
	})
}

// putInParallel runs b.RunParallel with each goroutine writing a key of
// its own under prefix.
func putInParallel(b *testing.B, s *Store, prefix string) {
	ctx := context.Background()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		key := prefix + strconv.FormatInt(n.Add(1), 10)
		for pb.Next() {
			if _, err := s.Put(ctx, key, value, store.Unconditional); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	benchStores(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		for i := range 100 {
			mustPut(b, s, "k/"+strconv.Itoa(i), string(value), store.Unconditional)
		}
		b.Run("sequential", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := s.Get(ctx, "k/"+strconv.Itoa(i%100)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if _, err := s.Get(ctx, "k/"+strconv.Itoa(i%100)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	})
}

// BenchmarkCAS is a chain of compare-and-swaps on one key per goroutine,
// each using the version the previous one returned.
func BenchmarkCAS(b *testing.B) {
	benchStores(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		chain := func(b *testing.B, key string, next func() bool) {
			v, err := s.Put(ctx, key, value, store.Unconditional)
			for err == nil && next() {
				v, err = s.Put(ctx, key, value, store.IfMatch(v))
			}
			if err != nil {
				b.Error(err)
			}
		}
		b.Run("sequential", func(b *testing.B) { chain(b, "cas", b.Loop) })
		b.Run("parallel", func(b *testing.B) {
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) { chain(b, "cas/"+strconv.FormatInt(n.Add(1), 10), pb.Next) })
		})
	})
}

// BenchmarkStripes compares one global lock with striped locks for
// parallel writers of different keys, with fsync on.
func BenchmarkStripes(b *testing.B) {
	for _, stripes := range []int{1, 64} {
		b.Run(fmt.Sprintf("stripes=%d", stripes), func(b *testing.B) {
			s := open(b, b.TempDir(), &Options{Stripes: stripes})
			b.SetParallelism(4)
			putInParallel(b, s, "p/")
		})
	}
}

func BenchmarkTxn(b *testing.B) {
	benchStores(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		for b.Loop() {
			_, err := s.Txn(ctx, []store.TxnOp{
				store.PutOp("t/a", value, store.Unconditional),
				store.PutOp("t/b", value, store.Unconditional),
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkList lists 100 keys of one first segment in a store of 1000
// keys in 10 first segments: a prefix with '/' reads one bucket, a prefix
// without reads them all.
func BenchmarkList(b *testing.B) {
	s := open(b, b.TempDir(), nil)
	s.noSync = true
	ctx := context.Background()
	for i := range 1000 {
		mustPut(b, s, fmt.Sprintf("seg%d/k%03d", i%10, i), "v", store.Unconditional)
	}
	for _, prefix := range []string{"seg3/", "seg3"} {
		b.Run("prefix="+prefix, func(b *testing.B) {
			for b.Loop() {
				p, err := s.List(ctx, prefix, nil)
				if err != nil || len(p.Items) != 100 {
					b.Fatalf("List = %d items, %v", len(p.Items), err)
				}
			}
		})
	}
}
