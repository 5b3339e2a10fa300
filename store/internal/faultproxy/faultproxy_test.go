package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// server counts the requests it applied.
func server(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n.Add(1)
		io.WriteString(w, "applied")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestHTTPFaults(t *testing.T) {
	srv, applied := server(t)
	p := NewHTTP(t, srv.URL)
	// A short timeout for the late request; a generous one otherwise (a
	// loaded machine under -race).
	short, long := &http.Client{Timeout: 200 * time.Millisecond}, &http.Client{Timeout: 10 * time.Second}
	c := long
	put := func() error {
		req, _ := http.NewRequest(http.MethodPut, p.URL+"/k", strings.NewReader("v"))
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	p.Add(Rule{Match: WriteRequest, Action: Drop, Times: 1})
	if err := put(); err == nil || applied.Load() != 1 {
		t.Fatalf("drop: err %v, applied %d; want an error and 1 applied", err, applied.Load())
	}

	p.Add(Rule{Action: Refuse, Status: 503, Times: 1})
	req, _ := http.NewRequest(http.MethodPut, p.URL+"/k", strings.NewReader("v"))
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != 503 || applied.Load() != 1 {
		t.Fatalf("refuse: %v %v, applied %d; want 503 and nothing applied", resp, err, applied.Load())
	}
	resp.Body.Close()

	p.Arm(Late)
	c = short
	if err := put(); err == nil {
		t.Fatal("late: the client got an answer")
	}
	c = long
	if applied.Load() != 1 {
		t.Fatal("late: applied before Land")
	}
	p.Land()
	if applied.Load() != 2 || p.Hits(Late) != 1 {
		t.Fatalf("late: applied %d, hits %d after Land; want 2 and 1", applied.Load(), p.Hits(Late))
	}
	if err := put(); err != nil || applied.Load() != 3 {
		t.Fatalf("no fault: %v, applied %d", err, applied.Load())
	}
}

func TestTCPFaults(t *testing.T) {
	srv, applied := server(t)
	p := NewTCP(t, srv.Listener.Addr().String())
	tr := &http.Transport{DisableKeepAlives: true}
	short, long := &http.Client{Timeout: 200 * time.Millisecond, Transport: tr}, &http.Client{Timeout: 10 * time.Second, Transport: tr}
	c := long
	put := func() error {
		req, _ := http.NewRequest(http.MethodPut, "http://"+p.Addr+"/k", strings.NewReader("v"))
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	p.Arm(Drop)
	if err := put(); err == nil || applied.Load() != 1 {
		t.Fatalf("drop: err %v, applied %d; want an error and 1 applied", err, applied.Load())
	}
	p.Arm(Late)
	c = short
	if err := put(); err == nil {
		t.Fatal("late: the client got an answer")
	}
	c = long
	if applied.Load() != 1 {
		t.Fatal("late: applied before Land")
	}
	p.Land()
	for i := 0; i < 100 && applied.Load() != 2; i++ {
		time.Sleep(10 * time.Millisecond) // the held bytes reach the server
	}
	if applied.Load() != 2 {
		t.Fatalf("late: applied %d after Land; want 2", applied.Load())
	}
	if err := put(); err != nil {
		t.Fatalf("no fault: %v", err)
	}
}
