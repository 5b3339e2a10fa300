//go:build linux

package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Size is the number of members of a Cluster.
const Size = 3

// ClusterOptions tune a Cluster. The zero value is the CI setting.
type ClusterOptions struct {
	// Dir holds one data directory per member. Required.
	Dir string
	// Fsync turns etcd's fsync on (default off: UnsafeNoFsync).
	Fsync bool
	// TickMs and ElectionMs are etcd's heartbeat and election timeouts.
	// Zero: 25 and 250, short enough for quick failovers and long enough
	// not to elect spuriously on a loaded two-core machine.
	TickMs, ElectionMs uint
}

// Cluster is three etcd members, each its own process.
type Cluster struct {
	opts    ClusterOptions
	members [Size]*member
	proxies [Size]*Proxy // in front of each member's client port
	peers   [Size]*Proxy // in front of each member's peer port
	ids     [Size]string // each member's id, in hex as etcd's peers send it
}

// member is one etcd member: the test binary re-executed (memberEnv).
type member struct {
	proc
	cfg   memberConfig
	stdin io.WriteCloser // its end of the member's stdin (see runMember)
}

func newMember(cfg memberConfig) *member {
	m := &member{cfg: cfg}
	m.proc = proc{label: "member " + cfg.Name, command: m.command}
	return m
}

// StartCluster starts the three members and waits until they have a
// leader. Close kills them.
func StartCluster(ctx context.Context, opts ClusterOptions) (_ *Cluster, err error) {
	if opts.Dir == "" {
		return nil, errors.New("failover: ClusterOptions.Dir is required")
	}
	if opts.TickMs == 0 {
		opts.TickMs = 25
	}
	if opts.ElectionMs == 0 {
		opts.ElectionMs = 250
	}
	ports, err := freePorts(2 * Size)
	if err != nil {
		return nil, err
	}
	// The members talk to each other through the peer proxies: each
	// listens on its own peer port and advertises its proxy's.
	c := &Cluster{opts: opts}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	var initial []string
	for i := range Size {
		p, err := StartPeerProxy(fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]))
		if err != nil {
			return nil, err
		}
		c.peers[i] = p
		initial = append(initial, fmt.Sprintf("m%d=http://%s", i, p.Addr()))
	}
	for i := range Size {
		c.members[i] = newMember(memberConfig{
			Name:           fmt.Sprintf("m%d", i),
			Dir:            filepath.Join(opts.Dir, fmt.Sprintf("m%d", i)),
			ClientURL:      fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:        fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			AdvertisePeer:  "http://" + c.peers[i].Addr(),
			InitialCluster: strings.Join(initial, ","),
			Fsync:          opts.Fsync,
			TickMs:         opts.TickMs,
			ElectionMs:     opts.ElectionMs,
		})
		if err := c.members[i].start(); err != nil {
			return nil, err
		}
		p, err := StartProxy(strings.TrimPrefix(c.members[i].cfg.ClientURL, "http://"))
		if err != nil {
			return nil, err
		}
		c.proxies[i] = p
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		return nil, err
	}
	for i, m := range c.members {
		id, _, err := status(ctx, m.cfg.ClientURL)
		if err != nil {
			return nil, err
		}
		c.ids[i] = strconv.FormatUint(id, 16)
	}
	return c, nil
}

// freePorts returns n loopback ports that were free a moment ago. The
// members must know each other's peer ports before any starts, so the
// kernel cannot pick them at listen time.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("failover: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Endpoints returns every member's client address.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.cfg.ClientURL)
	}
	return eps
}

// ClientEndpoints returns the addresses of the proxies in front of the
// members' client ports, for the workloads (see CutClients).
func (c *Cluster) ClientEndpoints() []string {
	var eps []string
	for _, p := range c.proxies {
		eps = append(eps, "http://"+p.Addr())
	}
	return eps
}

// CutClients cuts every client connection made through ClientEndpoints
// off mid-request: answers are swallowed for mute, then the connections
// are reset (Proxy.Cut), on all members at once.
func (c *Cluster) CutClients(mute time.Duration) {
	var wg sync.WaitGroup
	for _, p := range c.proxies {
		wg.Go(func() { p.Cut(mute) })
	}
	wg.Wait()
}

// Partition cuts member i off from the others, both ways: every peer
// connection it dialed or was dialed by is reset and new ones are
// refused, until HealPartition. Its clients still reach it.
func (c *Cluster) Partition(i int) {
	id := c.ids[i]
	for j, p := range c.peers {
		if j == i {
			p.Isolate(func(string) bool { return true })
		} else {
			p.Isolate(func(from string) bool { return from == id })
		}
	}
}

// HealPartition restores every peer link.
func (c *Cluster) HealPartition() {
	for _, p := range c.peers {
		p.Heal()
	}
}

// Close kills every member and waits for them to exit.
func (c *Cluster) Close() {
	for _, p := range append(c.proxies[:], c.peers[:]...) {
		if p != nil {
			p.Close()
		}
	}
	for _, m := range c.members {
		if m != nil {
			m.kill()
		}
	}
}

// command runs the test binary as the member; the member exits when its
// stdin closes, so it dies with us even if Pdeathsig does not fire.
func (m *member) command() (*exec.Cmd, error) {
	b, _ := json.Marshal(m.cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+string(b))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	m.stdin = stdin
	return cmd, nil
}

// Kill SIGKILLs member i; Restart starts it again on its data directory.
func (c *Cluster) Kill(i int) { c.members[i].kill() }

// Restart starts member i again after Kill.
func (c *Cluster) Restart(i int) error { return c.members[i].start() }

// Stop SIGSTOPs member i; Cont continues it.
func (c *Cluster) Stop(i int) error { return c.members[i].signal(syscall.SIGSTOP, true) }

// Cont SIGCONTs member i after Stop.
func (c *Cluster) Cont(i int) error { return c.members[i].signal(syscall.SIGCONT, false) }

// Leader returns the index of the member that a running member names as
// its leader and that agrees it is, asking each member for its status.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	var lastErr error = errors.New("no member answered")
	for i, m := range c.members {
		if !m.up() {
			continue
		}
		id, leader, err := status(ctx, m.cfg.ClientURL)
		if err != nil {
			lastErr = err
			continue
		}
		if leader != 0 && id == leader {
			return i, nil
		}
	}
	return -1, fmt.Errorf("failover: no leader: %w", lastErr)
}

// WaitLeader polls Leader until it answers, at most 30 seconds.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	return waitLeader(ctx, 30*time.Second, c.Leader)
}

// status asks one member for its own id and the leader it knows.
func status(ctx context.Context, ep string) (id, leader uint64, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	r, err := cl.Status(ctx, ep)
	if err != nil {
		return 0, 0, err
	}
	return r.Header.MemberId, r.Leader, nil
}
