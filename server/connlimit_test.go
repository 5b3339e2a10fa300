package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/servertest"
)

// consulTooManyConns is Consul's answer to a connection past
// limits.http_max_conns_per_client (hashicorp/go-connlimit), byte for byte.
const consulTooManyConns = "HTTP/1.1 429 Too Many Requests\r\n" +
	"Content-Type: text/plain\r\n" +
	"Content-Length: 81\r\n" +
	"Connection: close\r\n\r\n" +
	"Your IP is issuing too many concurrent connections, please rate limit your calls\n"

// TestConnLimitPerClient: as Consul's agent, the server lets one client IP
// hold at most MaxConnsPerClient connections, idle ones included; the
// next is answered Consul's 429, byte for byte, before its request is
// read, and closed; closing one makes room again.
func TestConnLimitPerClient(t *testing.T) {
	const limit = 3
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{MaxConnsPerClient: limit}})
	get := func(c net.Conn) (*http.Response, error) {
		if _, err := io.WriteString(c, "GET /v1/status/leader HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			return nil, err
		}
		return http.ReadResponse(bufio.NewReader(c), nil)
	}
	var held []net.Conn
	for i := range limit {
		c, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		resp, err := get(c) // served, then kept open (idle keep-alive)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d: %v, %v; want 200", i+1, resp, err)
		}
		resp.Body.Close()
		held = append(held, c)
	}
	over, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(over) // answered and closed without a request
	if err != nil {
		t.Fatalf("reading the refused connection: %v", err)
	}
	if string(got) != consulTooManyConns {
		t.Fatalf("connection %d past the limit got %q; want Consul's %q", limit+1, got, consulTooManyConns)
	}
	held[0].Close()
	// The server frees the slot when it sees the close: retry briefly.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := get(c)
		c.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after closing one connection, a new one still gets %v, %v", resp, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnLimitDefault: the default is Consul's, 200 connections per
// client IP, and a negative MaxConnsPerClient means no limit.
func TestConnLimitDefault(t *testing.T) {
	for _, tc := range []struct {
		max     int
		refused bool
	}{{0, true}, {-1, false}} {
		srv := servertest.Start(t, &servertest.Options{Config: server.Config{MaxConnsPerClient: tc.max}})
		var conns []net.Conn
		for range server.DefaultMaxConnsPerClient {
			c, err := net.Dial("tcp", srv.Addr)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		c, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /v1/status/leader HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("MaxConnsPerClient %d, connection 201: %v", tc.max, err)
		}
		body, _ := io.ReadAll(resp.Body)
		refused := resp.StatusCode == http.StatusTooManyRequests && strings.HasPrefix(string(body), "Your IP is issuing too many concurrent connections")
		if refused != tc.refused {
			t.Errorf("MaxConnsPerClient %d, connection 201: %d %q; want refused %v", tc.max, resp.StatusCode, body, tc.refused)
		}
		c.Close()
		for _, c := range conns {
			c.Close()
		}
	}
}
