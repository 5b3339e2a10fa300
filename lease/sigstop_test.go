//go:build unix

package lease_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/store/filestore"
)

// zombieEnv makes this test binary act as a lease holder (see zombieMain).
const zombieEnv = "LATCHKEY_LEASE_TEST_ZOMBIE_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(zombieEnv); dir != "" {
		os.Exit(zombieMain(dir))
	}
	os.Exit(m.Run())
}

// zombieMain holds the lease in the directory store at dir, renewing it,
// and writes the fenced resource; on a line from stdin it writes again
// with its token and prints what happened.
func zombieMain(dir string) int {
	ctx := context.Background()
	s, err := filestore.Open(dir, nil)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	lk, _ := lease.NewLocker(s, "locks/job", &lease.Options{Holder: "zombie", TTL: time.Second})
	l, err := lk.Acquire(ctx)
	if err == nil {
		_, err = lease.FencedPut(ctx, s, "resource", []byte("zombie-1"), l.Token())
	}
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	// Renew like Hold, but under mu, so that the test can stop this
	// process between two renews. A SIGSTOP in the middle of a
	// directory-store write would leave that key's file lock held by a
	// stopped process and block every other process's writes to the key
	// until it resumes: a different pause from the one this test is about.
	var mu sync.Mutex
	go func() {
		for {
			time.Sleep(lk.Options().RenewInterval)
			mu.Lock()
			l.Renew(ctx)
			mu.Unlock()
		}
	}()
	fmt.Println("held", l.Token())
	in := bufio.NewReader(os.Stdin)
	in.ReadString('\n')
	mu.Lock() // no renew in flight, and none from now on
	fmt.Println("pausing")
	in.ReadString('\n')
	// Resumed: write without looking at the lease, like a process that
	// checked it just before it was stopped.
	_, err = lease.FencedPut(ctx, s, "resource", []byte("zombie-2"), l.Token())
	switch {
	case errors.Is(err, lease.ErrFenced):
		select { // its validity ran out while it was stopped
		case <-l.Done():
		case <-time.After(5 * time.Second):
		}
		fmt.Println("fenced", errors.Is(l.Err(), lease.ErrLost))
	case err != nil:
		fmt.Println("error", err)
	default:
		fmt.Println("wrote")
	}
	return 0
}

// A real process holding the lease is stopped with SIGSTOP past its TTL;
// a contender takes over; when the process resumes, its write to the
// fenced resource is refused and it learns that its lease is lost.
func TestSIGSTOPpedHolderIsFenced(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), zombieEnv+"="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	line, _ := out.ReadString('\n')
	if !strings.HasPrefix(line, "held ") {
		cmd.Process.Kill()
		t.Fatalf("holder said %q", line)
	}
	time.Sleep(300 * time.Millisecond) // it renews meanwhile
	fmt.Fprintln(stdin, "pause")
	if line, _ := out.ReadString('\n'); line != "pausing\n" {
		cmd.Process.Kill()
		t.Fatalf("holder said %q", line)
	}
	cmd.Process.Signal(syscall.SIGSTOP)

	s, err := filestore.Open(dir, nil)
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	defer s.Close()
	// Runs before s.Close: a holder left stopped would keep its lease
	// and this test waiting.
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lk, _ := lease.NewLocker(s, "locks/job", &lease.Options{Holder: "contender", TTL: time.Second})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	l, err := lk.Acquire(ctx)
	if err != nil {
		t.Fatalf("contender: %v", err)
	}
	if _, err := lease.FencedPut(ctx, s, "resource", []byte("contender"), l.Token()); err != nil {
		t.Fatalf("contender's write: %v", err)
	}

	cmd.Process.Signal(syscall.SIGCONT)
	fmt.Fprintln(stdin, "go")
	line, _ = out.ReadString('\n')
	if strings.TrimSpace(line) != "fenced true" {
		t.Fatalf("the resumed holder's write: %q, want it fenced and its lease lost", line)
	}
	v, tok, _, err := lease.FencedGet(ctx, s, "resource")
	if err != nil || string(v) != "contender" || tok != l.Token() {
		t.Fatalf("resource = %q token %d (%v), want the contender's write", v, tok, err)
	}
}
