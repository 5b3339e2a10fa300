//go:build linux

package main

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/servertest"
)

// cutProxy forwards TCP connections to addr until cut, which closes the
// listener and every connection: what the holder sees when its network to
// the store fails.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, addr string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(p.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A holder cut off from the store loses the lock: its CMD, which ignores
// SIGTERM, gets SIGKILL after --grace, and is dead before the contender
// (which still reaches the store, latchkey's own server over the Consul
// API) takes the lock over and starts its CMD. The holder's CMD writes a
// heartbeat every 50ms; none may follow the contender's start. The TTL
// leaves a second between the kill and the earliest takeover, far above
// the scheduling delays of a loaded machine.
func TestLockRunCutOffHolderKillsCMDBeforeTakeover(t *testing.T) {
	t.Parallel()
	const ttl, grace = 10 * time.Second, time.Second
	srv := servertest.Start(t, nil)
	proxy := newCutProxy(t, srv.Addr)
	file := filepath.Join(t.TempDir(), "log")
	holder := binary(t, "lock", "run", "--store", "consul://"+proxy.ln.Addr().String()+"/locks",
		"--ttl", ttl.String(), "--grace", grace.String(), "k", "--",
		"sh", "-c", fmt.Sprintf(`trap "" TERM; while :; do echo "beat $LATCHKEY_FENCING_TOKEN" >> %s; sleep 0.05; done`, file))
	hOut := startCombined(t, holder)
	if !waitLines(t, file, 20*time.Second) {
		t.Fatalf("the holder's CMD never started: %s", hOut)
	}
	contender := binary(t, "lock", "run", "--store", "consul://"+srv.Addr+"/locks", "--ttl", ttl.String(), "k", "--",
		"sh", "-c", fmt.Sprintf(`echo "start $LATCHKEY_FENCING_TOKEN" >> %s`, file))
	cOut := startCombined(t, contender)
	time.Sleep(time.Second) // the holder renews through the proxy; the contender waits
	proxy.cut()

	hDone := make(chan error, 1)
	go func() { hDone <- holder.Wait() }()
	select {
	case err := <-hDone:
		if err == nil || !strings.Contains(hOut.String(), "lost") || !strings.Contains(hOut.String(), "SIGKILL in 1s") {
			t.Errorf("cut-off holder: %v: %s; want exit 1, lock lost, SIGKILL in 1s", err, hOut)
		}
	case <-time.After(3 * ttl):
		t.Fatalf("the cut-off holder still runs 3 TTLs after the cut: %s", hOut)
	}
	if err := contender.Wait(); err != nil {
		t.Fatalf("contender: %v: %s", err, cOut)
	}
	lines := readLines(t, file)
	start := -1
	for i, ln := range lines {
		if ln == "start 2" {
			start = i
		}
	}
	switch {
	case start < 1 || lines[0] != "beat 1":
		t.Fatalf("log has no heartbeat of the holder and then the contender's start 2: %q", lines)
	case start != len(lines)-1:
		t.Fatalf("the holder's CMD wrote %q after the contender started: it was not dead before the takeover", lines[start+1:])
	}
	t.Logf("%d heartbeats, then the contender's start", start)
}
