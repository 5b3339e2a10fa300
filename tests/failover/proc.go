//go:build linux

package failover

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one server process of a cluster (an etcd member, a Consul
// server): started from its command, SIGKILLed, SIGSTOPped and continued
// by the faults, and revived by Heal. It dies with us even if we are
// killed (Pdeathsig).
type proc struct {
	label   string                    // "member m0", "consul s1": for errors
	command func() (*exec.Cmd, error) // a fresh, unstarted command each start

	mu      sync.Mutex
	cmd     *exec.Cmd // nil while killed
	exited  chan struct{}
	stopped bool
}

// start runs a fresh command (after Kill, on the same data directory).
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd, err := p.command()
	if err != nil {
		return err
	}
	// The kernel sends the process SIGKILL when our thread exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failover: start %s: %w", p.label, err)
	}
	p.cmd, p.exited, p.stopped = cmd, make(chan struct{}), false
	go func(done chan struct{}) {
		cmd.Wait()
		close(done)
	}(p.exited)
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// signal sends sig (SIGSTOP, SIGCONT), noting whether it leaves the
// process stopped.
func (p *proc) signal(sig syscall.Signal, stopped bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("failover: %s is not running", p.label)
	}
	p.stopped = stopped
	return p.cmd.Process.Signal(sig)
}

// up is whether the process runs and is not stopped.
func (p *proc) up() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.stopped
}

// revive continues the process if it is stopped and starts it again if
// it was killed.
func (p *proc) revive() error {
	p.mu.Lock()
	down, stopped := p.cmd == nil, p.stopped
	p.mu.Unlock()
	if stopped {
		p.signal(syscall.SIGCONT, false)
	}
	if down {
		return p.start()
	}
	return nil
}

// waitLeader polls leader every 50ms until it answers, at most timeout.
func waitLeader(ctx context.Context, timeout time.Duration, leader func(context.Context) (int, error)) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		i, err := leader(ctx)
		if err == nil {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// dieWithUs makes cmd receive SIGTERM when this process dies, even by
// SIGKILL: a `lock run` so told ends its CMD's whole tree before it exits.
func dieWithUs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
