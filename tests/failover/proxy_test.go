package failover

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestProxyCutSwallowsAnswersThenResets: a request sent while the proxy is
// cutting reaches the target, its answer never reaches the client, and the
// client's connection then fails; a new connection is served.
func TestProxyCutSwallowsAnswersThenResets(t *testing.T) {
	got := make(chan string, 4)
	target := lineServer(t, func(line string) string {
		got <- line
		return "ok " + line
	})
	p, err := StartProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	c.Write([]byte("one\n"))
	if a, err := r.ReadString('\n'); err != nil || a != "ok one\n" {
		t.Fatalf("before the cut: %q, %v", a, err)
	}
	<-got

	cut := make(chan struct{})
	go func() { p.Cut(300 * time.Millisecond); close(cut) }()
	time.Sleep(50 * time.Millisecond) // the cut has begun: answers are muted
	c.Write([]byte("two\n"))
	if line := <-got; line != "two\n" {
		t.Fatalf("target got %q, want the request sent during the cut", line)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	a, err := r.ReadString('\n')
	if err == nil || a != "" {
		t.Fatalf("the answer to a request sent during the cut came through: %q, %v", a, err)
	}
	<-cut

	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Write([]byte("three\n"))
	if a, err := bufio.NewReader(c2).ReadString('\n'); err != nil || a != "ok three\n" {
		t.Fatalf("after the cut: %q, %v", a, err)
	}
}

// lineServer serves TCP on a loopback port until the test ends and
// returns its address: answer is given each line a client sends (with its
// newline), and what it returns is written back.
func lineServer(t *testing.T, answer func(line string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(answer(line)))
				}
			}()
		}
	}()
	return ln.Addr().String()
}
