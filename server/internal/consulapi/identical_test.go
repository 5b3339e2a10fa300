package consulapi

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// By default a write that would change nothing is skipped as Consul skips
// it: true, same ModifyIndex, no watcher woken. With
// Options.BumpIdenticalWrites every write bumps ModifyIndex.
func TestIdenticalWrites(t *testing.T) {
	for _, skip := range []bool{false, true} {
		s := newTestServer(t, &Options{BumpIdenticalWrites: !skip, MinSessionTTL: 100 * time.Millisecond})
		kv := s.client.KV()
		bumped := func(step string, before uint64) uint64 {
			t.Helper()
			p := mustGet(t, kv, "k")
			if moved := p.ModifyIndex != before; moved == skip {
				t.Errorf("skip=%v, %s: ModifyIndex %d → %d", skip, step, before, p.ModifyIndex)
			}
			return p.ModifyIndex
		}
		s.expect(t, "PUT", "/v1/kv/k?flags=3", "v", 200, "true")
		idx := mustGet(t, kv, "k").ModifyIndex

		// A blocking query is not woken by the identical write.
		woken := make(chan uint64, 1)
		go func() {
			_, meta, err := kv.Get("k", &api.QueryOptions{WaitIndex: idx, WaitTime: 300 * time.Millisecond})
			if err != nil {
				woken <- 0
				return
			}
			woken <- meta.LastIndex
		}()
		time.Sleep(50 * time.Millisecond)
		s.expect(t, "PUT", "/v1/kv/k?flags=3", "v", 200, "true")
		if got := <-woken; (got == idx) != skip {
			t.Errorf("skip=%v: blocking query answered index %d (was %d)", skip, got, idx)
		}
		idx = bumped("same value and flags", idx)

		s.expect(t, "PUT", "/v1/kv/k?flags=3&cas="+itoa(idx), "v", 200, "true")
		idx = bumped("identical cas", idx)
		s.expect(t, "PUT", "/v1/kv/k?flags=4", "v", 200, "true")
		if p := mustGet(t, kv, "k"); p.ModifyIndex == idx {
			t.Errorf("skip=%v: a flags change was skipped", skip)
		}
		idx = mustGet(t, kv, "k").ModifyIndex

		// Re-acquire by the holder with the same value and flags.
		sid, _, err := s.client.Session().Create(&api.SessionEntry{LockDelay: time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.expect(t, "PUT", "/v1/kv/k?flags=4&acquire="+sid, "v", 200, "true")
		idx = mustGet(t, kv, "k").ModifyIndex
		s.expect(t, "PUT", "/v1/kv/k?flags=4&acquire="+sid, "v", 200, "true")
		idx = bumped("identical re-acquire", idx)

		// A set after an acquire resets LockIndex 1 → 0: a change.
		s.expect(t, "PUT", "/v1/kv/k?flags=4", "v", 200, "true")
		if p := mustGet(t, kv, "k"); p.ModifyIndex == idx || p.LockIndex != 0 || p.Session != sid {
			t.Errorf("skip=%v: set after acquire: %+v (was at %d)", skip, p, idx)
		}
		idx = mustGet(t, kv, "k").ModifyIndex

		// A txn's identical set returns the entry's index, unchanged or new.
		_, body := s.do(t, "PUT", "/v1/txn", `[{"KV":{"Verb":"set","Key":"k","Value":"dg==","Flags":4}}]`)
		p := mustGet(t, kv, "k")
		if !strings.Contains(body, `"ModifyIndex":`+itoa(p.ModifyIndex)+`}`) {
			t.Errorf("skip=%v: txn set answered %s; key is at %d", skip, body, p.ModifyIndex)
		}
		bumped("identical txn set", idx)
	}
}

// By default, as in Consul: one value written three times with the
// official client keeps the ModifyIndex of the first write and answers no
// blocking query (`consul watch -type key` runs its handler once). A list
// query on the whole root, waiting from the first write's index, is
// answered by the next real change, at that change's index.
func TestIdenticalWritesSkippedByDefault(t *testing.T) {
	s := newTestServer(t, nil)
	kv := s.client.KV()
	put := func(key, value string, flags uint64) {
		t.Helper()
		if _, err := kv.Put(&api.KVPair{Key: key, Value: []byte(value), Flags: flags}, nil); err != nil {
			t.Fatal(err)
		}
	}
	put("cfg/k", "v1", 7)
	first := mustGet(t, kv, "cfg/k")
	_, meta, err := kv.List("", nil)
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan uint64, 1)
	go func() {
		_, m, err := kv.List("", &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: time.Minute})
		if err != nil {
			answered <- 0
			return
		}
		answered <- m.LastIndex
	}()
	for range 3 {
		put("cfg/k", "v1", 7)
	}
	if p := mustGet(t, kv, "cfg/k"); p.ModifyIndex != first.ModifyIndex || p.CreateIndex != first.CreateIndex {
		t.Errorf("three identical writes moved the entry from %d/%d to %d/%d (Create/Modify)",
			first.CreateIndex, first.ModifyIndex, p.CreateIndex, p.ModifyIndex)
	}
	if _, m, err := kv.Get("cfg/k", nil); err != nil || m.LastIndex != meta.LastIndex {
		t.Errorf("X-Consul-Index after identical writes = %d (%v), want %d", m.LastIndex, err, meta.LastIndex)
	}
	put("cfg/other", "x", 0)
	other := mustGet(t, kv, "cfg/other")
	if got := <-answered; got != other.ModifyIndex {
		t.Errorf("the blocking list was answered at index %d, want %d (the first real change): an identical write woke it", got, other.ModifyIndex)
	}
}
