package failover

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestProxyRefuse: Refuse resets the connections from the addresses it
// names, refuses new ones from them, lets the others through, and
// Refuse(nil) heals; ConsulCluster.Isolate builds partitions on it.
func TestProxyRefuse(t *testing.T) {
	echo := lineServer(t, func(line string) string { return line })
	p, err := StartProxyAt("127.0.0.1:0", echo)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: time.Second}
		c, err := d.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	works := func(c net.Conn) bool {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return false
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		return err == nil && line == "ping\n"
	}
	old := dial("127.0.0.12")
	defer old.Close()
	if !works(old) {
		t.Fatal("a connection through the proxy does not work")
	}
	p.Refuse(func(a net.Addr) bool { return a.(*net.TCPAddr).IP.String() == "127.0.0.12" })
	if works(old) {
		t.Fatal("a connection from a refused address still works after Refuse")
	}
	refused := dial("127.0.0.12")
	defer refused.Close()
	if works(refused) {
		t.Fatal("a new connection from a refused address works")
	}
	other := dial("127.0.0.13")
	defer other.Close()
	if !works(other) {
		t.Fatal("a connection from another address is refused")
	}
	p.Refuse(nil)
	healed := dial("127.0.0.12")
	defer healed.Close()
	if !works(healed) {
		t.Fatal("a connection from the address does not work after Refuse(nil)")
	}
}
