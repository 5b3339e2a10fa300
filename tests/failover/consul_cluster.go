//go:build linux

package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
)

// ConsulBinEnv names the consul executable (v1.16.3, built and cached by
// .ci/run) that a ConsulCluster runs.
const ConsulBinEnv = "LATCHKEY_TEST_CONSUL_BIN"

// ConsulOptions tune a ConsulCluster.
type ConsulOptions struct {
	// Dir holds one data directory per server. Required.
	Dir string
	// Bin is the consul executable. Required.
	Bin string
	// Log, when set, receives the servers' output (warnings and up).
	Log *os.File
}

// ConsulCluster is three Consul servers (consul agent -server
// -bootstrap-expect 3), each its own process, on loopback.
//
// Server i binds its RPC and HTTP ports on 127.0.0.(11+i) and its Serf
// gossip on 127.0.0.(21+i), which it also advertises; in front of its RPC
// port, on the advertised address and the same port, sits a Proxy, so
// every Raft and forwarded RPC connection between servers goes through
// the proxy of the server it reaches, coming from the bind address of the
// server that opened it (Consul dials from its bind address). That makes
// a partition possible without root: Isolate has the isolated server's
// proxy refuse everyone and the other proxies refuse it. Gossip is not
// proxied (it is UDP too), so a partition is of Raft and RPC only: Serf
// still sees the isolated server alive, as it would across a firewall
// that lets only gossip through. The workloads reach the HTTP ports
// through proxies of their own (CutClients).
type ConsulCluster struct {
	opts    ConsulOptions
	servers [Size]*consulServer
	http    [Size]*Proxy // in front of each server's HTTP port
	rpc     [Size]*Proxy // in front of each server's RPC port

	mu       sync.Mutex
	isolated int // the server Isolate cut off, or -1
	records  map[string]*fencedRecorder
	leaders  []leaderChange // see watchLeader
	stopPoll context.CancelFunc
	polled   chan struct{}
}

// leaderChange is a moment the cluster's available leader changed: the
// server that is leader from At on, or -1 for none.
type leaderChange struct {
	At     time.Time
	Leader int
}

type consulServer struct {
	proc
	name              string
	bindIP, advIP     string
	httpPort, rpcPort int
	serfPort          int
	args              []string
}

// consulConfig is every server's configuration file: the fastest timers
// Consul allows (raft_multiplier 1), no leave on a signal (a SIGKILL
// leaves no chance anyway, and a restart rejoins with its data), no DNS,
// gRPC or WAN gossip.
const consulConfig = `{
  "performance": {"raft_multiplier": 1, "leave_drain_time": "0s"},
  "leave_on_terminate": false,
  "skip_leave_on_interrupt": true,
  "disable_update_check": true,
  "log_level": "warn",
  "autopilot": {"cleanup_dead_servers": false, "last_contact_threshold": "1s", "server_stabilization_time": "1s"}
}`

// StartConsulCluster starts the three servers and waits until they have a
// leader. Close kills them.
func StartConsulCluster(ctx context.Context, opts ConsulOptions) (_ *ConsulCluster, err error) {
	if opts.Dir == "" || opts.Bin == "" {
		return nil, errors.New("failover: ConsulOptions.Dir and Bin are required")
	}
	cfg := filepath.Join(opts.Dir, "consul.json")
	if err := os.WriteFile(cfg, []byte(consulConfig), 0o644); err != nil {
		return nil, err
	}
	c := &ConsulCluster{opts: opts, isolated: -1, records: map[string]*fencedRecorder{}}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for i := range Size {
		s := &consulServer{name: fmt.Sprintf("s%d", i), bindIP: fmt.Sprintf("127.0.0.%d", 11+i), advIP: fmt.Sprintf("127.0.0.%d", 21+i)}
		// The RPC port must be free on both addresses: the proxy takes it
		// on the advertised one (Consul advertises its own port number).
		rp, err := freePortOn(s.advIP)
		if err != nil {
			return nil, err
		}
		s.rpcPort = rp
		p, err := StartProxyAt(net.JoinHostPort(s.advIP, strconv.Itoa(rp)), net.JoinHostPort(s.bindIP, strconv.Itoa(rp)))
		if err != nil {
			return nil, err
		}
		c.rpc[i] = p
		hp, err := freePortOn(s.bindIP)
		if err != nil {
			return nil, err
		}
		sp, err := freePortOn(s.advIP)
		if err != nil {
			return nil, err
		}
		s.httpPort, s.serfPort = hp, sp
		c.servers[i] = s
	}
	for i, s := range c.servers {
		s.args = []string{"agent", "-server", "-bootstrap-expect", strconv.Itoa(Size), "-node", s.name,
			"-data-dir", filepath.Join(opts.Dir, s.name), "-config-file", cfg,
			"-bind", s.bindIP, "-client", s.bindIP, "-serf-lan-bind", s.advIP, "-advertise", s.advIP,
			"-http-port", strconv.Itoa(s.httpPort), "-server-port", strconv.Itoa(s.rpcPort), "-serf-lan-port", strconv.Itoa(s.serfPort),
			"-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1", "-serf-wan-port", "-1"}
		for j, o := range c.servers {
			if j != i {
				s.args = append(s.args, "-retry-join", net.JoinHostPort(o.advIP, strconv.Itoa(o.serfPort)), "-retry-interval", "200ms")
			}
		}
		s.proc = proc{label: "consul " + s.name, command: c.command(s)}
		if err := s.start(); err != nil {
			return nil, err
		}
		p, err := StartProxy(s.httpAddr())
		if err != nil {
			return nil, err
		}
		c.http[i] = p
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	c.stopPoll, c.polled = cancel, make(chan struct{})
	go c.watchLeader(pctx)
	return c, nil
}

// watchLeader asks for the leader every 50ms and records each change of
// the available leader: one that runs, is not stopped, is not isolated
// and names itself (so an isolated leader that has not stepped down yet
// does not count). A server that does not answer in time (a loaded
// machine) leaves the state as it was, unless it is the leader and is
// known to be down, stopped or isolated.
func (c *ConsulCluster) watchLeader(ctx context.Context) {
	defer close(c.polled)
	last := -2
	for ctx.Err() == nil {
		at := time.Now()
		l, err := c.ask(ctx)
		unsure := err != nil
		c.mu.Lock()
		if l >= 0 && l == c.isolated {
			l = -1
		}
		gone := last >= 0 && (last == c.isolated || !c.servers[last].up())
		if l != last && ctx.Err() == nil && (l >= 0 || !unsure || gone) {
			// A leader found is stamped when the poll began (it was
			// there by its answer: the recovery is not flattered), a
			// loss when it ended (so that it is never stamped before the
			// fault that caused it).
			if l < 0 {
				at = time.Now()
			}
			c.leaders = append(c.leaders, leaderChange{At: at, Leader: l})
			last = l
		}
		c.mu.Unlock()
		sleep(ctx, 50*time.Millisecond)
	}
}

// LeaderBack is when the cluster had an available leader again (see
// watchLeader) after losing it between from and until; lost is false
// when it did not lose it then, or has not had one since.
func (c *ConsulCluster) LeaderBack(from, until time.Time) (back time.Time, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lostAt time.Time
	for _, ch := range c.leaders {
		switch {
		case ch.At.Before(from):
		case lostAt.IsZero():
			if ch.At.After(until) {
				return time.Time{}, false
			}
			if ch.Leader < 0 {
				lostAt = ch.At
			}
		case ch.Leader >= 0:
			return ch.At, true
		}
	}
	return time.Time{}, false
}

func freePortOn(ip string) (int, error) {
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		return 0, fmt.Errorf("failover: free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *consulServer) httpAddr() string {
	return net.JoinHostPort(s.bindIP, strconv.Itoa(s.httpPort))
}

// rpcAddr is the RPC address s advertises (and names when it leads).
func (s *consulServer) rpcAddr() string {
	return net.JoinHostPort(s.advIP, strconv.Itoa(s.rpcPort))
}

// command runs server s from c's consul binary, its output to Log.
func (c *ConsulCluster) command(s *consulServer) func() (*exec.Cmd, error) {
	return func() (*exec.Cmd, error) {
		cmd := exec.Command(c.opts.Bin, s.args...)
		if c.opts.Log != nil {
			cmd.Stdout, cmd.Stderr = c.opts.Log, c.opts.Log
		}
		return cmd, nil
	}
}

// Name is "consul".
func (c *ConsulCluster) Name() string { return "consul" }

// Kill SIGKILLs server i.
func (c *ConsulCluster) Kill(i int) { c.servers[i].kill() }

// Restart starts server i again on its data directory after Kill.
func (c *ConsulCluster) Restart(i int) error { return c.servers[i].start() }

// Stop SIGSTOPs server i.
func (c *ConsulCluster) Stop(i int) error { return c.servers[i].signal(syscall.SIGSTOP, true) }

// Cont SIGCONTs server i after Stop.
func (c *ConsulCluster) Cont(i int) error { return c.servers[i].signal(syscall.SIGCONT, false) }

// Isolate cuts server i off from the other two (Raft and RPC, both ways:
// see ConsulCluster); clients still reach it. Rejoin ends it.
func (c *ConsulCluster) Isolate(i int) {
	c.mu.Lock()
	c.isolated = i
	c.mu.Unlock()
	ip := c.servers[i].bindIP
	for j, p := range c.rpc {
		if j == i {
			p.Refuse(func(net.Addr) bool { return true })
			continue
		}
		p.Refuse(func(a net.Addr) bool {
			ta, ok := a.(*net.TCPAddr)
			return ok && ta.IP.String() == ip
		})
	}
}

// Rejoin ends Isolate.
func (c *ConsulCluster) Rejoin() {
	c.mu.Lock()
	c.isolated = -1
	c.mu.Unlock()
	for _, p := range c.rpc {
		p.Refuse(nil)
	}
}

// CutClients cuts every workload connection off mid-request (Proxy.Cut on
// every HTTP proxy at once).
func (c *ConsulCluster) CutClients(mute time.Duration) {
	var wg sync.WaitGroup
	for _, p := range c.http {
		wg.Go(func() { p.Cut(mute) })
	}
	wg.Wait()
}

// ClientAddresses are the HTTP proxies' HOST:PORTs, the workloads' way
// in, in server order.
func (c *ConsulCluster) ClientAddresses() []string {
	var as []string
	for _, p := range c.http {
		as = append(as, p.Addr())
	}
	return as
}

// Leader returns the index of the running server that names itself as
// the leader (/v1/status/leader gives the leader's advertised RPC
// address).
func (c *ConsulCluster) Leader(ctx context.Context) (int, error) {
	i, err := c.ask(ctx)
	if i >= 0 {
		return i, nil
	}
	if err == nil {
		err = errors.New("no server answered")
	}
	return -1, fmt.Errorf("failover: no consul leader: %w", err)
}

// ask asks each running server in turn for the leader until one names
// itself; it returns that server (or -1) and the last error a server
// gave before (nil if none did).
func (c *ConsulCluster) ask(ctx context.Context) (int, error) {
	var lastErr error
	for i, s := range c.servers {
		if !s.up() {
			continue
		}
		addr, err := consulLeader(ctx, s.httpAddr())
		if err != nil {
			lastErr = err
			continue
		}
		if addr == s.rpcAddr() {
			return i, lastErr
		}
	}
	return -1, lastErr
}

// WaitLeader polls Leader until it answers, at most 60 seconds.
func (c *ConsulCluster) WaitLeader(ctx context.Context) (int, error) {
	return waitLeader(ctx, 60*time.Second, c.Leader)
}

func consulLeader(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/status/leader", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: status/leader: %s", addr, resp.Status)
	}
	var leader string
	if err := json.NewDecoder(resp.Body).Decode(&leader); err != nil {
		return "", err
	}
	return leader, nil
}

// Heal continues every stopped server, restarts every killed one, ends a
// partition, and waits for a leader that every server knows.
func (c *ConsulCluster) Heal(ctx context.Context) error {
	c.Rejoin()
	for _, s := range c.servers {
		if err := s.revive(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		l, err := c.WaitLeader(ctx)
		if err != nil {
			return err
		}
		want := c.servers[l].rpcAddr()
		agreed := true
		for _, s := range c.servers {
			if got, err := consulLeader(ctx, s.httpAddr()); err != nil || got != want {
				agreed = false
			}
		}
		if agreed {
			return nil
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return fmt.Errorf("failover: consul servers do not agree on a leader: %w", ctx.Err())
		}
	}
}

// StoreURL is the consul:// URL of the proxied HTTP addresses.
func (c *ConsulCluster) StoreURL(prefix string) string {
	return "consul://" + strings.Join(c.ClientAddresses(), ",") + "/" + strings.TrimSuffix(prefix, "/")
}

// Open opens a workload client: consulstore with every server's HTTP
// proxy, in server order (as consul://h1,h2,h3/prefix gives them), its
// Gets and Puts of any key ending in "fenced" recorded (see
// fencedRecorder) for FencedHistory.
func (c *ConsulCluster) Open(ctx context.Context, prefix string) (store.Store, error) {
	as := c.ClientAddresses()
	s, err := consulstore.Open(ctx, &consulstore.Options{Address: as[0], Addresses: as[1:], Prefix: prefix})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	rec := c.records[prefix]
	if rec == nil {
		rec = newFencedRecorder("fenced")
		c.records[prefix] = rec
	}
	c.mu.Unlock()
	return rec.wrap(s), nil
}

// direct opens consulstore on the servers themselves (no proxy), for
// reading back.
func (c *ConsulCluster) direct(ctx context.Context, prefix string) (*consulstore.Store, error) {
	var as []string
	for _, s := range c.servers {
		as = append(as, s.httpAddr())
	}
	return consulstore.Open(ctx, &consulstore.Options{Address: as[0], Addresses: as[1:], Prefix: prefix})
}

// Value reads key (under prefix) back, consistently.
func (c *ConsulCluster) Value(ctx context.Context, prefix, key string) ([]byte, error) {
	e, _, err := c.readBack(ctx, prefix, key)
	return e.Value, err
}

// readBack reads key (under prefix) from the servers themselves (direct),
// consistently; found is false when it does not exist.
func (c *ConsulCluster) readBack(ctx context.Context, prefix, key string) (e store.Entry, found bool, err error) {
	s, err := c.direct(ctx, prefix)
	if err != nil {
		return store.Entry{}, false, err
	}
	defer s.Close()
	e, err = s.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return store.Entry{}, false, nil
	}
	return e, err == nil, err
}

// FencedHistory is every value the fenced key took, in ModifyIndex order:
// Consul keeps no history, so it is what the workload clients read and
// wrote (fencedRecorder) and the value read back now.
func (c *ConsulCluster) FencedHistory(ctx context.Context, prefix, key string) ([]AcceptedWrite, error) {
	c.mu.Lock()
	rec := c.records[prefix]
	c.mu.Unlock()
	e, found, err := c.readBack(ctx, prefix, key)
	if !found {
		return nil, err
	}
	if rec == nil {
		rec = newFencedRecorder(key)
	}
	rec.saw(key, e)
	return rec.history(key)
}

// LeaderChanges lists the changes of the available leader between from
// and until, as offsets from base ("+2.1s s1"; "none" for no leader).
func (c *ConsulCluster) LeaderChanges(base, from, until time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, ch := range c.leaders {
		if ch.At.Before(from) || ch.At.After(until) {
			continue
		}
		who := "none"
		if ch.Leader >= 0 {
			who = c.servers[ch.Leader].name
		}
		parts = append(parts, fmt.Sprintf("%v %s", ch.At.Sub(base).Round(time.Millisecond), who))
	}
	return strings.Join(parts, ", ")
}

// Close kills every server and stops the proxies.
func (c *ConsulCluster) Close() {
	if c.stopPoll != nil {
		c.stopPoll()
		<-c.polled
	}
	for _, ps := range [][Size]*Proxy{c.http, c.rpc} {
		for _, p := range ps {
			if p != nil {
				p.Close()
			}
		}
	}
	for _, s := range c.servers {
		if s != nil {
			s.kill()
		}
	}
}

// String lists the servers' addresses, for logs.
func (c *ConsulCluster) String() string {
	var b strings.Builder
	for i, s := range c.servers {
		fmt.Fprintf(&b, "%s http %s rpc %s (proxy %s) ", s.name, s.httpAddr(), c.rpc[i].target, c.rpc[i].Addr())
	}
	return b.String()
}
