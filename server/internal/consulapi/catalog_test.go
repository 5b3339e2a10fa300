package consulapi

import (
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/latchkey/latchkey/server/internal/consulmodel"
)

// A session that names a service check registered through the agent
// holds its lock while the check passes or warns; the check failing
// invalidates the session in the same commit (its lock released, the
// key's ModifyIndex moved), as in Consul. A critical check refuses a new
// session, and deregistering a check invalidates the sessions naming it.
func TestSessionServiceCheckThroughAgent(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client
	if err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: "web1", Name: "web", Port: 80,
		Check: &api.AgentServiceCheck{CheckID: "web1:alive", TTL: "1m", Status: api.HealthPassing}}); err != nil {
		t.Fatal(err)
	}
	checks, _, err := c.Health().Node("node-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, hc := range checks {
		ids = append(ids, hc.CheckID+"="+hc.Status+"/"+hc.ServiceID)
	}
	if got := strings.Join(ids, ","); got != "serfHealth=passing/,web1:alive=passing/web1" {
		t.Fatalf("health of node-test: %s", got)
	}

	sid, _, err := c.Session().Create(&api.SessionEntry{ServiceChecks: []api.ServiceCheck{{ID: "web1:alive"}}, LockDelay: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.KV().Acquire(&api.KVPair{Key: "leader", Value: []byte("me"), Session: sid}, nil); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	held := mustGet(t, c.KV(), "leader")
	if err := c.Agent().WarnTTL("web1:alive", "slow"); err != nil {
		t.Fatal(err)
	}
	if info, _, err := c.Session().Info(sid, nil); err != nil || info == nil {
		t.Fatalf("a warning check invalidated the session: %v %v", info, err)
	}
	if err := c.Agent().FailTTL("web1:alive", "down"); err != nil {
		t.Fatal(err)
	}
	if info, _, err := c.Session().Info(sid, nil); err != nil || info != nil {
		t.Fatalf("session after its check failed: %+v %v", info, err)
	}
	if p := mustGet(t, c.KV(), "leader"); p.Session != "" || p.ModifyIndex == held.ModifyIndex {
		t.Fatalf("lock after its session's check failed: %+v (was %+v)", p, held)
	}

	_, _, err = c.Session().Create(&api.SessionEntry{ServiceChecks: []api.ServiceCheck{{ID: "web1:alive"}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "Check 'web1:alive' is in critical state") {
		t.Fatalf("session on a critical check: %v", err)
	}

	if err := c.Agent().PassTTL("web1:alive", ""); err != nil {
		t.Fatal(err)
	}
	sid, _, err = c.Session().Create(&api.SessionEntry{NodeChecks: []string{"serfHealth", "web1:alive"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Agent().CheckDeregister("web1:alive"); err != nil {
		t.Fatal(err)
	}
	if info, _, err := c.Session().Info(sid, nil); err != nil || info != nil {
		t.Fatalf("session after its check was deregistered: %+v %v", info, err)
	}
	if _, _, err := c.Session().Create(&api.SessionEntry{NodeChecks: []string{"web1:alive"}}, nil); err == nil ||
		!strings.Contains(err.Error(), "Missing check 'web1:alive' registration") {
		t.Fatalf("session on a deregistered check: %v", err)
	}
}

// A node registered in the catalog can carry sessions; deregistering it
// invalidates them. Registration errors are 4xx/500 with Consul's texts
// and change nothing.
func TestCatalogNodeSessions(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client
	if _, _, err := c.Session().Create(&api.SessionEntry{Node: "foo"}, nil); err == nil || !strings.Contains(err.Error(), "Missing node registration") {
		t.Fatalf("session on an unknown node: %v", err)
	}
	if _, err := c.Catalog().Register(&api.CatalogRegistration{Node: "foo", Address: "127.0.0.2",
		Check: &api.AgentCheck{CheckID: "foo:alive", Status: api.HealthPassing}}, nil); err != nil {
		t.Fatal(err)
	}
	nodes, _, err := c.Catalog().Nodes(nil)
	if err != nil || len(nodes) != 2 || nodes[0].Node != "foo" || nodes[1].Node != "node-test" {
		t.Fatalf("catalog nodes: %+v %v", nodes, err)
	}
	sid, _, err := c.Session().Create(&api.SessionEntry{Node: "foo", NodeChecks: []string{"foo:alive"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The default serfHealth belongs to this server's node only.
	if _, _, err := c.Session().Create(&api.SessionEntry{Node: "foo"}, nil); err == nil ||
		!strings.Contains(err.Error(), "Missing check 'serfHealth' registration") {
		t.Fatalf("default session on another node: %v", err)
	}
	s.expect(t, "PUT", "/v1/catalog/register", `{"Node":"baz","Address":"127.0.0.4","Datacenter":"dc9"}`, 500, "No path to datacenter")
	s.expect(t, "PUT", "/v1/agent/check/register", `{"ID":"a","Status":"passing"}`, 200, "")
	s.expect(t, "PUT", "/v1/catalog/deregister", `{"Node":"node-test","CheckID":"a"}`, 200, "true")
	// A check for a service that is not registered is refused.
	s.expect(t, "PUT", "/v1/catalog/register", `{"Node":"foo","SkipNodeUpdate":true,"Check":{"CheckID":"x","ServiceID":"nope"}}`,
		500, "Missing service registration")
	if _, err := c.Catalog().Deregister(&api.CatalogDeregistration{Node: "foo"}, nil); err != nil {
		t.Fatal(err)
	}
	if info, _, err := c.Session().Info(sid, nil); err != nil || info != nil {
		t.Fatalf("session after its node was deregistered: %+v %v", info, err)
	}
	if checks, _, err := c.Health().Node("foo", nil); err != nil || len(checks) != 0 {
		t.Fatalf("health of a deregistered node: %+v %v", checks, err)
	}

	// Limits: one registration past 256 checks on a node is refused whole.
	var many []string
	for i := range consulmodel.MaxNodeEntries + 1 {
		many = append(many, `{"CheckID":"c`+itoa(uint64(i))+`","Status":"passing"}`)
	}
	s.expect(t, "PUT", "/v1/catalog/register", `{"Node":"bar","Address":"127.0.0.3","Checks":[`+strings.Join(many, ",")+`]}`,
		400, "Too many checks on node bar (limit 256)")
	if nodes, _, err := c.Catalog().Nodes(nil); err != nil || len(nodes) != 1 {
		t.Fatalf("catalog after a refused registration: %+v %v", nodes, err)
	}
}
