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

// A short client timeout for the late request; a generous one otherwise
// (a loaded machine under -race).
const short, long = 200 * time.Millisecond, 10 * time.Second

// putter returns a PUT of "v" to url through tr (nil: the default) with a
// client timeout.
func putter(url string, tr http.RoundTripper) func(timeout time.Duration) error {
	return func(timeout time.Duration) error {
		req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader("v"))
		resp, err := (&http.Client{Timeout: timeout, Transport: tr}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
}

// lateThenLand arms Late, after one request was applied, checks that a put
// gets no answer and is not applied before Land, then lands it.
func lateThenLand(t *testing.T, f Faults, put func(time.Duration) error, applied *atomic.Int32) {
	t.Helper()
	f.Arm(Late)
	if err := put(short); err == nil {
		t.Fatal("late: the client got an answer")
	}
	if applied.Load() != 1 {
		t.Fatal("late: applied before Land")
	}
	f.Land()
}

func TestHTTPFaults(t *testing.T) {
	srv, applied := server(t)
	p := NewHTTP(t, srv.URL)
	put := putter(p.URL+"/k", nil)

	p.Add(Rule{Match: WriteRequest, Action: Drop, Times: 1})
	if err := put(long); err == nil || applied.Load() != 1 {
		t.Fatalf("drop: err %v, applied %d; want an error and 1 applied", err, applied.Load())
	}

	p.Add(Rule{Action: Refuse, Status: 503, Times: 1})
	req, _ := http.NewRequest(http.MethodPut, p.URL+"/k", strings.NewReader("v"))
	resp, err := (&http.Client{Timeout: long}).Do(req)
	if err != nil || resp.StatusCode != 503 || applied.Load() != 1 {
		t.Fatalf("refuse: %v %v, applied %d; want 503 and nothing applied", resp, err, applied.Load())
	}
	resp.Body.Close()

	lateThenLand(t, p, put, applied)
	if applied.Load() != 2 || p.Hits(Late) != 1 {
		t.Fatalf("late: applied %d, hits %d after Land; want 2 and 1", applied.Load(), p.Hits(Late))
	}
	if err := put(long); err != nil || applied.Load() != 3 {
		t.Fatalf("no fault: %v, applied %d", err, applied.Load())
	}
}

func TestTCPFaults(t *testing.T) {
	srv, applied := server(t)
	p := NewTCP(t, srv.Listener.Addr().String())
	put := putter("http://"+p.Addr+"/k", &http.Transport{DisableKeepAlives: true})
	p.Arm(Drop)
	if err := put(long); err == nil || applied.Load() != 1 {
		t.Fatalf("drop: err %v, applied %d; want an error and 1 applied", err, applied.Load())
	}
	lateThenLand(t, p, put, applied)
	for i := 0; i < 100 && applied.Load() != 2; i++ {
		time.Sleep(10 * time.Millisecond) // the held bytes reach the server
	}
	if applied.Load() != 2 {
		t.Fatalf("late: applied %d after Land; want 2", applied.Load())
	}
	if err := put(long); err != nil {
		t.Fatalf("no fault: %v", err)
	}
}
