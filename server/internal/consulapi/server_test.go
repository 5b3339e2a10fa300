package consulapi_test

import (
	"testing"

	"github.com/hashicorp/consul/api"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/servertest"
)

// The full server (latchkey serve's wiring) routes /v1/ to this package,
// with the node name and ACL token of its configuration.
func TestServeWiring(t *testing.T) {
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{NodeName: "wired", ACLToken: "t0k"}})
	cfg := api.DefaultConfig()
	cfg.Address, cfg.Token = srv.Addr, "t0k"
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if name, err := c.Agent().NodeName(); err != nil || name != "wired" {
		t.Fatalf("NodeName = %q, %v", name, err)
	}
	ok, _, err := c.KV().CAS(&api.KVPair{Key: "w/k", Value: []byte("v")}, nil)
	if err != nil || !ok {
		t.Fatalf("CAS = %v, %v", ok, err)
	}
	id, _, err := c.Session().Create(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e, _, err := c.Session().Info(id, nil); err != nil || e == nil || e.Node != "wired" {
		t.Fatalf("session = %+v, %v", e, err)
	}
	cfg.Token = ""
	anon, _ := api.NewClient(cfg)
	if _, _, err := anon.KV().Get("w/k", nil); err == nil {
		t.Fatal("a request without the ACL token succeeded")
	}
}
