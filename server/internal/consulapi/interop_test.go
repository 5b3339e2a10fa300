package consulapi

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// Tests with the official client (github.com/hashicorp/consul/api) against
// our handler over a real engine.

func TestClientCASCreateOnly(t *testing.T) {
	s := newTestServer(t, nil)
	kv := s.client.KV()
	for i, want := range []bool{true, false} {
		ok, _, err := kv.CAS(&api.KVPair{Key: "cas/k", Value: []byte{byte('a' + i)}, ModifyIndex: 0}, nil)
		if err != nil || ok != want {
			t.Fatalf("CAS(0) #%d = %v, %v; want %v", i+1, ok, err, want)
		}
	}
	if p := mustGet(t, kv, "cas/k"); string(p.Value) != "a" {
		t.Fatalf("value %q, want the first writer's %q", p.Value, "a")
	}
	// On the wire: both are HTTP 200, the second with body false.
	s.expect(t, "PUT", "/v1/kv/cas/raw?cas=0", "x", 200, "true")
	s.expect(t, "PUT", "/v1/kv/cas/raw?cas=0", "y", 200, "false")
}

func TestClientStaleCAS(t *testing.T) {
	s := newTestServer(t, nil)
	kv := s.client.KV()
	mustPut(t, kv, "k", "v1")
	first := mustGet(t, kv, "k")
	mustPut(t, kv, "k", "v2")
	ok, _, err := kv.CAS(&api.KVPair{Key: "k", Value: []byte("v3"), ModifyIndex: first.ModifyIndex}, nil)
	if err != nil || ok {
		t.Fatalf("stale CAS = %v, %v; want false", ok, err)
	}
	cur := mustGet(t, kv, "k")
	if string(cur.Value) != "v2" {
		t.Fatalf("value after stale CAS %q, want v2", cur.Value)
	}
	ok, _, err = kv.CAS(&api.KVPair{Key: "k", Value: []byte("v3"), ModifyIndex: cur.ModifyIndex}, nil)
	if err != nil || !ok {
		t.Fatalf("fresh CAS = %v, %v; want true", ok, err)
	}
	if got := mustGet(t, kv, "k"); string(got.Value) != "v3" || got.ModifyIndex <= cur.ModifyIndex {
		t.Fatalf("after CAS: %q at %d (was %d)", got.Value, got.ModifyIndex, cur.ModifyIndex)
	}
}

func TestClientTxnFailingCheckIndexAppliesNothing(t *testing.T) {
	s := newTestServer(t, nil)
	kv := s.client.KV()
	mustPut(t, kv, "t/b", "b0")
	b := mustGet(t, kv, "t/b")
	ops := api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: "t/a", Value: []byte("a1")}},
		{KV: &api.KVTxnOp{Verb: api.KVCheckIndex, Key: "t/b", Index: b.ModifyIndex + 100}},
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: "t/b"}},
	}
	ok, resp, _, err := s.client.Txn().Txn(ops, nil)
	if err != nil || ok {
		t.Fatalf("txn = %v, %v; want rolled back", ok, err)
	}
	if len(resp.Errors) != 1 || resp.Errors[0].OpIndex != 1 {
		t.Fatalf("errors %+v, want one at op 1", resp.Errors)
	}
	if p := mustGet(t, kv, "t/a"); p != nil {
		t.Fatalf("t/a written by a failed txn: %q", p.Value)
	}
	if p := mustGet(t, kv, "t/b"); p == nil || p.ModifyIndex != b.ModifyIndex {
		t.Fatalf("t/b changed by a failed txn: %+v", p)
	}
	// The same with the right index applies every op at one index.
	ops[1].KV.Index = b.ModifyIndex
	ok, resp, _, err = s.client.Txn().Txn(ops, nil)
	if err != nil || !ok {
		t.Fatalf("txn = %v, %v, %+v; want applied", ok, err, resp)
	}
	a := mustGet(t, kv, "t/a")
	if a == nil || string(a.Value) != "a1" || mustGet(t, kv, "t/b") != nil {
		t.Fatalf("txn effects missing: a=%+v", a)
	}
	if len(resp.Results) != 2 || resp.Results[0].KV.ModifyIndex != a.ModifyIndex || resp.Results[0].KV.Value != nil {
		t.Fatalf("results %+v: want the set's entry (no value) and the check's", resp.Results)
	}
}

func TestClientSessionTTLExpiryReleasesKeys(t *testing.T) {
	s := newTestServer(t, nil) // MinSessionTTL 100ms
	kv, sess := s.client.KV(), s.client.Session()
	const ttl = 300 * time.Millisecond
	id, _, err := sess.Create(&api.SessionEntry{TTL: ttl.String(), LockDelay: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ok, _, err := kv.Acquire(&api.KVPair{Key: "ttl/k", Value: []byte("held"), Session: id}, nil)
	if err != nil || !ok {
		t.Fatalf("acquire = %v, %v", ok, err)
	}
	p := mustGet(t, kv, "ttl/k")
	if p.Session != id || p.LockIndex != 1 {
		t.Fatalf("after acquire: %+v", p)
	}
	// Block on the key until its session goes; no renew is sent.
	for p.Session != "" {
		var err error
		p, _, err = kv.Get("ttl/k", &api.QueryOptions{WaitIndex: p.ModifyIndex, WaitTime: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(start) > 3*ttl {
			t.Fatalf("session not invalidated after %v (TTL %v)", time.Since(start), ttl)
		}
	}
	if el := time.Since(start); el < ttl {
		t.Fatalf("invalidated after %v, before the TTL %v", el, ttl)
	}
	if string(p.Value) != "held" || p.LockIndex != 1 {
		t.Fatalf("release behaviour must keep value and LockIndex: %+v", p)
	}
	if e, _, err := sess.Info(id, nil); err != nil || e != nil {
		t.Fatalf("session info after expiry = %+v, %v; want none", e, err)
	}
	if e, _, err := sess.Renew(id, nil); err != nil || e != nil {
		t.Fatalf("renew after expiry = %+v, %v; want not found", e, err)
	}
}

func TestClientSessionRenewKeepsSession(t *testing.T) {
	s := newTestServer(t, nil)
	sess := s.client.Session()
	id, _, err := sess.Create(&api.SessionEntry{TTL: "200ms"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(800 * time.Millisecond) // well past 2×TTL
	for time.Now().Before(deadline) {
		e, _, err := sess.Renew(id, nil)
		if err != nil || e == nil || e.TTL != "200ms" {
			t.Fatalf("renew = %+v, %v", e, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if e, _, err := sess.Info(id, nil); err != nil || e == nil {
		t.Fatalf("renewed session gone: %v", err)
	}
}

func TestClientLockDelayBlocksReacquire(t *testing.T) {
	s := newTestServer(t, nil)
	kv, sess := s.client.KV(), s.client.Session()
	const delay = 400 * time.Millisecond
	s1, _, err := sess.Create(&api.SessionEntry{LockDelay: delay}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, err := sess.Create(&api.SessionEntry{LockDelay: delay}, nil)
	if err != nil {
		t.Fatal(err)
	}
	acquire := func(id string) bool {
		ok, _, err := kv.Acquire(&api.KVPair{Key: "ld/k", Session: id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !acquire(s1) {
		t.Fatal("first acquire failed")
	}
	if _, err := sess.Destroy(s1, nil); err != nil {
		t.Fatal(err)
	}
	destroyed := time.Now()
	if p := mustGet(t, kv, "ld/k"); p.Session != "" {
		t.Fatalf("destroyed session still holds the key: %+v", p)
	}
	if acquire(s2) {
		t.Fatalf("re-acquire %v after the destroy succeeded; lock-delay is %v", time.Since(destroyed), delay)
	}
	// A txn lock is refused the same way, as a 409 error.
	ok, resp, _, err := s.client.Txn().Txn(api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVLock, Key: "ld/k", Session: s2}}}, nil)
	if err != nil || ok || len(resp.Errors) != 1 {
		t.Fatalf("txn lock in lock-delay = %v, %v, %+v", ok, err, resp)
	}
	time.Sleep(time.Until(destroyed.Add(delay + 50*time.Millisecond)))
	if !acquire(s2) {
		t.Fatal("acquire after the lock-delay failed")
	}
	// An explicit release starts no lock-delay.
	if ok, _, err := kv.Release(&api.KVPair{Key: "ld/k", Session: s2}, nil); err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	if !acquire(s2) {
		t.Fatal("acquire right after a release failed")
	}
}

func TestClientLockMutualExclusion(t *testing.T) {
	s := newTestServer(t, nil)
	const contenders, rounds = 5, 4
	maxHolders, total := contend(t, contenders, rounds, 5*time.Millisecond, func() (<-chan struct{}, func() error, error) {
		l, err := s.client.LockOpts(&api.LockOptions{Key: "mutex/lock", SessionTTL: "10s"})
		if err != nil {
			return nil, nil, err
		}
		lost, err := l.Lock(nil)
		return lost, l.Unlock, err
	})
	if maxHolders != 1 {
		t.Fatalf("max simultaneous holders %d, want 1", maxHolders)
	}
	if total != contenders*rounds {
		t.Fatalf("%d acquisitions, want %d", total, contenders*rounds)
	}
}

func TestClientSemaphoreLimit(t *testing.T) {
	s := newTestServer(t, nil)
	const contenders, rounds, limit = 5, 3, 2
	maxHolders, total := contend(t, contenders, rounds, 10*time.Millisecond, func() (<-chan struct{}, func() error, error) {
		sem, err := s.client.SemaphoreOpts(&api.SemaphoreOptions{Prefix: "sem/", Limit: limit, SessionTTL: "10s"})
		if err != nil {
			return nil, nil, err
		}
		lost, err := sem.Acquire(nil)
		return lost, sem.Release, err
	})
	if maxHolders > limit || maxHolders < 1 {
		t.Fatalf("max simultaneous holders %d, want 1..%d", maxHolders, limit)
	}
	if total != contenders*rounds {
		t.Fatalf("%d acquisitions, want %d", total, contenders*rounds)
	}
}

// contend runs contenders goroutines that each, rounds times, take a hold
// with acquire (which returns the hold's lost channel and its release),
// keep it for hold unless it is lost (a failure), and release it. It
// returns the most holders seen at once and the number of holds taken.
func contend(t *testing.T, contenders, rounds int, hold time.Duration, acquire func() (lost <-chan struct{}, release func() error, err error)) (maxHolders, total int32) {
	t.Helper()
	var holders, most, n atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	for range contenders {
		wg.Go(func() {
			for range rounds {
				lost, release, err := acquire()
				if err != nil {
					errs <- err
					return
				}
				raiseMax(&most, holders.Add(1))
				n.Add(1)
				select {
				case <-lost:
					errs <- errLost
				case <-time.After(hold):
				}
				holders.Add(-1)
				if err := release(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return most.Load(), n.Load()
}

func TestClientBlockingQueryScopedToKey(t *testing.T) {
	s := newTestServer(t, nil)
	kv := s.client.KV()
	mustPut(t, kv, "w/key", "v1")
	p := mustGet(t, kv, "w/key")

	// A write to a sibling does not wake the query: it times out with the
	// same index.
	const wait = 300 * time.Millisecond
	done := make(chan *api.QueryMeta, 1)
	start := time.Now()
	go func() {
		_, meta, err := kv.Get("w/key", &api.QueryOptions{WaitIndex: p.ModifyIndex, WaitTime: wait})
		if err != nil {
			meta = nil
		}
		done <- meta
	}()
	time.Sleep(50 * time.Millisecond)
	mustPut(t, kv, "w/keysibling", "x")
	mustPut(t, kv, "w/other", "x")
	meta := <-done
	if meta == nil || meta.LastIndex != p.ModifyIndex {
		t.Fatalf("query woken by a sibling: %+v", meta)
	}
	if el := time.Since(start); el < wait {
		t.Fatalf("query returned after %v, before its wait %v", el, wait)
	}

	// A write to the key wakes it long before its wait.
	got := make(chan *api.KVPair, 1)
	go func() {
		q, _, err := kv.Get("w/key", &api.QueryOptions{WaitIndex: p.ModifyIndex, WaitTime: 10 * time.Second})
		if err != nil {
			q = nil
		}
		got <- q
	}()
	time.Sleep(50 * time.Millisecond)
	mustPut(t, kv, "w/key", "v2")
	select {
	case q := <-got:
		if q == nil || string(q.Value) != "v2" || q.ModifyIndex <= p.ModifyIndex {
			t.Fatalf("woken query got %+v", q)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write to the key did not wake its blocking query")
	}
}
