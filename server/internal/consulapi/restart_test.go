package consulapi

import (
	"context"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// serveDir runs a handler over the engine in dir until the returned stop
// is called.
func serveDir(t *testing.T, dir string) (*api.Client, func()) {
	t.Helper()
	e, err := engine.Open(dir, &engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(e, &Options{NodeName: "n", MinSessionTTL: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewUnstartedServer(h)
	srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	srv.Start()
	cfg := api.DefaultConfig()
	cfg.Address = srv.Listener.Addr().String()
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			srv.Close()
			h.Close()
			e.Close()
		}
	}
	t.Cleanup(stop)
	return c, stop
}

// Sessions and the keys they hold survive a restart; TTL timers restart at
// full length (2×TTL), as on a Consul leader change, and then expire.
func TestSessionsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	c, stop := serveDir(t, dir)
	const ttl = 300 * time.Millisecond
	ttlID, _, err := c.Session().Create(&api.SessionEntry{TTL: ttl.String(), LockDelay: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	plainID, _, err := c.Session().Create(&api.SessionEntry{Behavior: api.SessionBehaviorDelete}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, id := range map[string]string{"r/ttl": ttlID, "r/plain": plainID} {
		if ok, _, err := c.KV().Acquire(&api.KVPair{Key: key, Session: id}, nil); err != nil || !ok {
			t.Fatalf("acquire %s: %v %v", key, ok, err)
		}
	}
	stop()

	c, _ = serveDir(t, dir)
	restarted := time.Now()
	for _, id := range []string{ttlID, plainID} {
		if e, _, err := c.Session().Info(id, nil); err != nil || e == nil {
			t.Fatalf("session %s lost in the restart: %v", id, err)
		}
	}
	p := mustGet(t, c.KV(), "r/ttl")
	if p.Session != ttlID {
		t.Fatalf("lock lost in the restart: %+v", p)
	}
	for p.Session != "" {
		p, _, err = c.KV().Get("r/ttl", &api.QueryOptions{WaitIndex: p.ModifyIndex, WaitTime: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(restarted) > 4*ttl {
			t.Fatal("TTL session not invalidated after the restart")
		}
	}
	if el := time.Since(restarted); el < ttl {
		t.Fatalf("invalidated %v after the restart, before the TTL %v", el, ttl)
	}
	// The session without a TTL still holds its key; destroying it
	// deletes the key (Behavior delete), using the index that survived.
	if p := mustGet(t, c.KV(), "r/plain"); p == nil || p.Session != plainID {
		t.Fatalf("r/plain: %+v", p)
	}
	if _, err := c.Session().Destroy(plainID, nil); err != nil {
		t.Fatal(err)
	}
	if p := mustGet(t, c.KV(), "r/plain"); p != nil {
		t.Fatalf("r/plain not deleted with its session: %+v", p)
	}
}
