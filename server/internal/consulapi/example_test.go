package consulapi_test

import (
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/server/internal/consulapi"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// Serve the Consul-compatible API over an engine and use it with the
// official client: a create-only CAS applies once, then answers false.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "consulapi-example-")
	defer os.RemoveAll(dir)
	e, err := engine.Open(dir, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	h, err := consulapi.New(e, &consulapi.Options{NodeName: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	cfg := api.DefaultConfig()
	cfg.Address = srv.Listener.Addr().String()
	c, _ := api.NewClient(cfg)
	for range 2 {
		ok, _, err := c.KV().CAS(&api.KVPair{Key: "jobs/a", Value: []byte("mine")}, nil)
		fmt.Println(ok, err)
	}
	p, _, _ := c.KV().Get("jobs/a", nil)
	fmt.Printf("%s %s\n", p.Key, p.Value)
	// Output:
	// true <nil>
	// false <nil>
	// jobs/a mine
}
