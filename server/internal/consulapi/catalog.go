package consulapi

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/keyrange"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// The catalog: just what sessions with Checks, NodeChecks and
// ServiceChecks need. Nodes, services and health checks are registered
// through PUT /v1/catalog/register (or, on this server's own node, the
// agent's /v1/agent/service/register and /v1/agent/check/register) and
// read back through /v1/catalog/nodes and /v1/health/node/<node>. This
// server's node is always registered and has a serfHealth check that is
// always passing. Checks have no runners: their status is what was last
// registered or set through /v1/agent/check/{pass,warn,fail,update}.
//
// Consul's session rules (state store sessionCreateTxn, ensureCheckTxn,
// deleteCheckTxn): a session is refused unless its node is registered and
// every check it names exists on that node and is not critical; a check
// that becomes critical, or is deregistered (alone, with its service or
// with its node), invalidates every session that names it, in the same
// transaction.
//
// Records, in bucket consul/catalog:
//
//	"n" node              → JSON catalogNode
//	"s" node "\x00" id    → JSON catalogService
//	"c" node "\x00" id    → JSON healthCheck
const (
	bucketCatalog = "consul/catalog"
	catalogTouch  = "\x00consul/catalog"
	// maxCatalogBody bounds a register body.
	maxCatalogBody = 64 << 10
	// maxCatalogNodes bounds the registered nodes (this server's own not
	// counted), maxNodeEntries the services and the checks of one node.
	// Past them a registration is 400 and changes nothing.
	maxCatalogNodes = 1024
	maxNodeEntries  = 256
)

// countPrefix counts the catalog records under prefix, stopping at limit.
func countPrefix(tx *engine.Tx, prefix []byte, limit int) int {
	b := tx.ReadBucket(bucketCatalog)
	if b == nil {
		return 0
	}
	n, _ := keyrange.Count(b.Cursor(), prefix, limit)
	return n
}

// roomFor reports a 400 when adding key (absent so far) would pass limit
// records under prefix.
func roomFor(tx *engine.Tx, key, prefix []byte, limit int, what string) error {
	if b := tx.ReadBucket(bucketCatalog); b != nil && b.Get(key) != nil {
		return nil
	}
	if countPrefix(tx, prefix, limit) >= limit {
		return errorf(http.StatusBadRequest, "Too many %s (limit %d)", what, limit)
	}
	return nil
}

var keyCatalogIndex = []byte("catalog-index")

// Check statuses.
const (
	healthPassing  = "passing"
	healthWarning  = "warning"
	healthCritical = "critical"
)

type catalogNode struct {
	ID              string
	Node            string
	Address         string
	Datacenter      string
	TaggedAddresses map[string]string
	Meta            map[string]string
	CreateIndex     uint64
	ModifyIndex     uint64
}

type catalogService struct {
	ID      string
	Service string
	Tags    []string
	Address string
	Port    int
}

type healthCheck struct {
	Node        string
	CheckID     string
	Name        string
	Status      string
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	ServiceTags []string
	Type        string
	CreateIndex uint64
	ModifyIndex uint64
}

// catalogRegistration is the body of PUT /v1/catalog/register.
type catalogRegistration struct {
	ID              string
	Node            string
	Address         string
	Datacenter      string
	TaggedAddresses map[string]string
	NodeMeta        map[string]string
	Service         *catalogService
	Check           *healthCheck
	Checks          []*healthCheck
	SkipNodeUpdate  bool
}

func catalogKey(kind, node, id string) []byte { return []byte(kind + node + "\x00" + id) }

func (h *Handler) selfNode(addr string) *catalogNode {
	return &catalogNode{ID: nodeID(h.opts.NodeName), Node: h.opts.NodeName, Address: addr, Datacenter: h.opts.Datacenter,
		TaggedAddresses: map[string]string{"lan": addr}, Meta: map[string]string{}, CreateIndex: 1, ModifyIndex: 1}
}

func (h *Handler) selfSerfHealth() *healthCheck {
	return &healthCheck{Node: h.opts.NodeName, CheckID: serfHealth, Name: "Serf Health Status", Status: healthPassing,
		Output: "Agent alive and reachable", ServiceTags: []string{}, CreateIndex: 1, ModifyIndex: 1}
}

func loadJSON[T any](tx *engine.Tx, key []byte) (*T, bool) {
	b := tx.ReadBucket(bucketCatalog)
	if b == nil {
		return nil, false
	}
	v := b.Get(key)
	if v == nil {
		return nil, false
	}
	out := new(T)
	if err := json.Unmarshal(v, out); err != nil {
		panic(err)
	}
	return out, true
}

func scanJSON[T any](tx *engine.Tx, prefix []byte) []*T {
	b := tx.ReadBucket(bucketCatalog)
	if b == nil {
		return nil
	}
	var out []*T
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		t := new(T)
		if err := json.Unmarshal(v, t); err != nil {
			panic(err)
		}
		out = append(out, t)
	}
	return out
}

func putJSON(tx *engine.Tx, key []byte, v any) {
	buf, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	mustBolt(tx.Bucket(bucketCatalog).Put(key, buf))
}

func catalogChanged(tx *engine.Tx) {
	mustBolt(tx.Bucket(bucketMeta).Put(keyCatalogIndex, binary.BigEndian.AppendUint64(nil, tx.Index())))
	tx.Touch(catalogTouch)
}

func catalogIndex(tx *engine.Tx) uint64 {
	if b := tx.ReadBucket(bucketMeta); b != nil {
		if v := b.Get(keyCatalogIndex); len(v) == 8 {
			return max(binary.BigEndian.Uint64(v), 1)
		}
	}
	return 1
}

// node returns a registered node (this server's own included).
func (h *Handler) node(tx *engine.Tx, name, addr string) (*catalogNode, bool) {
	if name == h.opts.NodeName {
		return h.selfNode(addr), true
	}
	return loadJSON[catalogNode](tx, []byte("n"+name))
}

// check returns a check of a node (serfHealth of this server's node
// included).
func (h *Handler) check(tx *engine.Tx, node, id string) (*healthCheck, bool) {
	if node == h.opts.NodeName && id == serfHealth {
		return h.selfSerfHealth(), true
	}
	return loadJSON[healthCheck](tx, catalogKey("c", node, id))
}

func (h *Handler) nodeChecks(tx *engine.Tx, node string) []*healthCheck {
	out := scanJSON[healthCheck](tx, []byte("c"+node+"\x00"))
	if node == h.opts.NodeName {
		out = slices.Insert(out, 0, h.selfSerfHealth())
	}
	return out
}

// sessionChecksOK applies Consul's session-create rules to se: its node
// is registered, every check it names exists on that node and is not
// critical.
func (h *Handler) sessionChecksOK(tx *engine.Tx, se *sessionEntry) error {
	if _, ok := h.node(tx, se.Node, ""); !ok {
		return serverError("Missing node registration")
	}
	for _, id := range sessionCheckIDs(se) {
		c, ok := h.check(tx, se.Node, id)
		if !ok {
			return serverError("Missing check '%s' registration", id)
		}
		if c.Status == healthCritical {
			return serverError("Check '%s' is in %s state", id, c.Status)
		}
	}
	return nil
}

// sessionCheckIDs are the checks se depends on: NodeChecks (which Checks
// fills when NodeChecks is absent) and ServiceChecks.
func sessionCheckIDs(se *sessionEntry) []string {
	ids := slices.Clone(se.NodeChecks)
	for _, c := range se.Checks {
		if !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	for _, c := range se.ServiceChecks {
		ids = append(ids, c.ID)
	}
	return ids
}

// invalidateForCheck invalidates, inside tx, every session of node that
// names check id; pass id "" for every session of the node. It returns
// the invalidated ids (their timers are disarmed after commit).
func (h *Handler) invalidateForCheck(tx *engine.Tx, node, id string) []string {
	var gone []string
	for _, se := range listSessions(tx) {
		if se.Node != node || (id != "" && !slices.Contains(sessionCheckIDs(se), id)) {
			continue
		}
		h.invalidateTx(tx, se)
		gone = append(gone, se.ID)
	}
	return gone
}

// putCheck stores c (after validation) and, if it is critical,
// invalidates the sessions that name it.
func (h *Handler) putCheck(tx *engine.Tx, c *healthCheck) ([]string, error) {
	if c.CheckID == "" {
		return nil, badRequest("Missing CheckID")
	}
	if c.Node == h.opts.NodeName && c.CheckID == serfHealth {
		return nil, badRequest("serfHealth is managed by this server")
	}
	if c.Status == "" {
		c.Status = healthCritical
	}
	switch c.Status {
	case healthPassing, healthWarning, healthCritical:
	default:
		return nil, badRequest("Invalid check status: '" + c.Status + "'")
	}
	c.ServiceTags = nonNil(c.ServiceTags)
	if c.ServiceID != "" {
		svc, ok := loadJSON[catalogService](tx, catalogKey("s", c.Node, c.ServiceID))
		if !ok {
			return nil, serverError("Missing service registration")
		}
		c.ServiceName, c.ServiceTags = svc.Service, nonNil(svc.Tags)
	}
	if err := roomFor(tx, catalogKey("c", c.Node, c.CheckID), []byte("c"+c.Node+"\x00"), maxNodeEntries, "checks on node "+c.Node); err != nil {
		return nil, err
	}
	c.CreateIndex, c.ModifyIndex = tx.Index(), tx.Index()
	if old, ok := loadJSON[healthCheck](tx, catalogKey("c", c.Node, c.CheckID)); ok {
		c.CreateIndex = old.CreateIndex
	}
	putJSON(tx, catalogKey("c", c.Node, c.CheckID), c)
	catalogChanged(tx)
	if c.Status == healthCritical {
		return h.invalidateForCheck(tx, c.Node, c.CheckID), nil
	}
	return nil, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// register applies a catalog registration inside tx.
func (h *Handler) register(tx *engine.Tx, reg *catalogRegistration, addr string) ([]string, error) {
	if reg.Node == "" {
		return nil, badRequest("Must provide node")
	}
	if reg.Datacenter != "" && reg.Datacenter != h.opts.Datacenter {
		return nil, serverError("No path to datacenter")
	}
	if _, ok := h.node(tx, reg.Node, addr); !ok || !reg.SkipNodeUpdate {
		if reg.Node == h.opts.NodeName {
			if !reg.SkipNodeUpdate {
				return nil, badRequest("This server's own node cannot be re-registered; use SkipNodeUpdate")
			}
		} else {
			if reg.Address == "" {
				return nil, badRequest("Must provide address if SkipNodeUpdate is not set")
			}
			if err := roomFor(tx, []byte("n"+reg.Node), []byte("n"), maxCatalogNodes, "nodes"); err != nil {
				return nil, err
			}
			n := &catalogNode{ID: reg.ID, Node: reg.Node, Address: reg.Address, Datacenter: h.opts.Datacenter,
				TaggedAddresses: reg.TaggedAddresses, Meta: reg.NodeMeta, CreateIndex: tx.Index(), ModifyIndex: tx.Index()}
			if old, ok := loadJSON[catalogNode](tx, []byte("n"+reg.Node)); ok {
				n.CreateIndex = old.CreateIndex
			}
			if n.TaggedAddresses == nil {
				n.TaggedAddresses = map[string]string{}
			}
			if n.Meta == nil {
				n.Meta = map[string]string{}
			}
			putJSON(tx, []byte("n"+reg.Node), n)
			catalogChanged(tx)
		}
	}
	if s := reg.Service; s != nil {
		if s.Service == "" {
			return nil, badRequest("Must provide service name with ID")
		}
		if s.ID == "" {
			s.ID = s.Service
		}
		s.Tags = nonNil(s.Tags)
		if err := roomFor(tx, catalogKey("s", reg.Node, s.ID), []byte("s"+reg.Node+"\x00"), maxNodeEntries, "services on node "+reg.Node); err != nil {
			return nil, err
		}
		putJSON(tx, catalogKey("s", reg.Node, s.ID), s)
		catalogChanged(tx)
	}
	checks := reg.Checks
	if reg.Check != nil {
		checks = append([]*healthCheck{reg.Check}, checks...)
	}
	var gone []string
	for _, c := range checks {
		if c.Node == "" {
			c.Node = reg.Node
		}
		if c.Node != reg.Node {
			return nil, badRequest("Check node " + c.Node + " does not match node " + reg.Node)
		}
		g, err := h.putCheck(tx, c)
		if err != nil {
			return nil, err
		}
		gone = append(gone, g...)
	}
	return gone, nil
}

// deregister removes a check, a service (with its checks) or a node (with
// everything on it), invalidating the sessions that depended on them.
func (h *Handler) deregister(tx *engine.Tx, node, serviceID, checkID string) ([]string, error) {
	if node == "" {
		return nil, badRequest("Must provide node")
	}
	cb := tx.Bucket(bucketCatalog)
	delCheck := func(c *healthCheck) []string {
		mustBolt(cb.Delete(catalogKey("c", c.Node, c.CheckID)))
		catalogChanged(tx)
		return h.invalidateForCheck(tx, c.Node, c.CheckID)
	}
	var gone []string
	switch {
	case checkID != "":
		if c, ok := loadJSON[healthCheck](tx, catalogKey("c", node, checkID)); ok {
			gone = delCheck(c)
		}
	case serviceID != "":
		for _, c := range scanJSON[healthCheck](tx, []byte("c"+node+"\x00")) {
			if c.ServiceID == serviceID {
				gone = append(gone, delCheck(c)...)
			}
		}
		if cb.Get(catalogKey("s", node, serviceID)) != nil {
			mustBolt(cb.Delete(catalogKey("s", node, serviceID)))
			catalogChanged(tx)
		}
	default:
		if node == h.opts.NodeName {
			return nil, badRequest("This server's own node cannot be deregistered")
		}
		for _, c := range scanJSON[healthCheck](tx, []byte("c"+node+"\x00")) {
			gone = append(gone, delCheck(c)...)
		}
		for _, kind := range []string{"s", "c"} {
			var keys [][]byte
			c := cb.Cursor()
			p := []byte(kind + node + "\x00")
			for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
				keys = append(keys, slices.Clone(k))
			}
			for _, k := range keys {
				mustBolt(cb.Delete(k))
			}
		}
		if cb.Get([]byte("n"+node)) != nil {
			mustBolt(cb.Delete([]byte("n" + node)))
			catalogChanged(tx)
		}
		gone = append(gone, h.invalidateForCheck(tx, node, "")...)
	}
	return gone, nil
}

// catalogWrite runs fn in one Update, disarms the timers of the sessions
// it invalidated and answers: true on /v1/catalog/, an empty 200 on the
// agent's endpoints, as Consul does.
func (h *Handler) catalogWrite(w http.ResponseWriter, r *http.Request, q url.Values, fn func(tx *engine.Tx) ([]string, error)) error {
	if err := h.parseDC(q); err != nil {
		return err
	}
	var gone []string
	if _, err := h.e.Update(r.Context(), func(tx *engine.Tx) error {
		var err error
		gone, err = fn(tx)
		return err
	}); err != nil {
		return err
	}
	for _, id := range gone {
		h.sess.disarm(id)
	}
	if strings.HasPrefix(r.URL.Path, "/v1/agent/") {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	writeJSON(w, q, 0, true)
	return nil
}

// readBody reads a JSON body of at most maxCatalogBody bytes into v.
func readBody(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCatalogBody))
	if err != nil {
		return badRequest("Request decode failed: " + err.Error())
	}
	if err := json.Unmarshal(b, v); err != nil {
		return badRequest("Request decode failed: " + err.Error())
	}
	return nil
}

// serveCatalogWrite serves the PUT endpoints of the catalog and the
// agent's check and service registration; ok is false for other paths.
func (h *Handler) serveCatalogWrite(w http.ResponseWriter, r *http.Request, q url.Values, path string) (bool, error) {
	addr := h.serverAddr(r)
	self := h.opts.NodeName
	switch {
	case path == "/v1/catalog/register":
		var reg catalogRegistration
		if err := readBody(w, r, &reg); err != nil {
			return true, err
		}
		return true, h.catalogWrite(w, r, q, func(tx *engine.Tx) ([]string, error) { return h.register(tx, &reg, addr) })
	case path == "/v1/catalog/deregister":
		var d struct{ Node, ServiceID, CheckID string }
		if err := readBody(w, r, &d); err != nil {
			return true, err
		}
		return true, h.catalogWrite(w, r, q, func(tx *engine.Tx) ([]string, error) { return h.deregister(tx, d.Node, d.ServiceID, d.CheckID) })
	case path == "/v1/agent/service/register":
		var s struct {
			catalogService
			Name   string
			Check  *agentCheck
			Checks []*agentCheck
		}
		if err := readBody(w, r, &s); err != nil {
			return true, err
		}
		svc := s.catalogService
		if svc.Service == "" {
			svc.Service = s.Name
		}
		reg := &catalogRegistration{Node: self, SkipNodeUpdate: true, Service: &svc}
		for i, c := range append([]*agentCheck{s.Check}, s.Checks...) {
			if c == nil {
				continue
			}
			hc := c.toHealth(self)
			hc.ServiceID = cmp.Or(svc.ID, svc.Service)
			if hc.CheckID == "" {
				hc.CheckID = "service:" + hc.ServiceID
				if len(s.Checks) > 0 {
					hc.CheckID += ":" + string(rune('0'+i))
				}
			}
			reg.Checks = append(reg.Checks, hc)
		}
		return true, h.catalogWrite(w, r, q, func(tx *engine.Tx) ([]string, error) { return h.register(tx, reg, addr) })
	case strings.HasPrefix(path, "/v1/agent/service/deregister/"):
		id := strings.TrimPrefix(path, "/v1/agent/service/deregister/")
		return true, h.catalogWrite(w, r, q, func(tx *engine.Tx) ([]string, error) { return h.deregister(tx, self, id, "") })
	case path == "/v1/agent/check/register":
		var c agentCheck
		if err := readBody(w, r, &c); err != nil {
			return true, err
		}
		hc := c.toHealth(self)
		return true, h.catalogWrite(w, r, q, func(tx *engine.Tx) ([]string, error) { return h.putCheck(tx, hc) })
	case strings.HasPrefix(path, "/v1/agent/check/deregister/"):
		id := strings.TrimPrefix(path, "/v1/agent/check/deregister/")
		return true, h.catalogWrite(w, r, q, func(tx *engine.Tx) ([]string, error) { return h.deregister(tx, self, "", id) })
	case strings.HasPrefix(path, "/v1/agent/check/"):
		verb, id, _ := strings.Cut(strings.TrimPrefix(path, "/v1/agent/check/"), "/")
		status := map[string]string{"pass": healthPassing, "warn": healthWarning, "fail": healthCritical, "update": ""}
		st, known := status[verb]
		if !known {
			return false, nil
		}
		output := q.Get("note")
		if verb == "update" {
			var u struct{ Status, Output string }
			if err := readBody(w, r, &u); err != nil {
				return true, err
			}
			st, output = u.Status, u.Output
		}
		return true, h.catalogWrite(w, r, q, func(tx *engine.Tx) ([]string, error) {
			c, ok := loadJSON[healthCheck](tx, catalogKey("c", self, id))
			if !ok {
				return nil, errorf(http.StatusNotFound, "Unknown check ID %q. Ensure that the check ID is passed, not the check name.", id)
			}
			c.Status, c.Output = st, output
			return h.putCheck(tx, c)
		})
	}
	return false, nil
}

// agentCheck is a check definition as the agent takes it.
type agentCheck struct {
	ID, CheckID, Name, Notes, Status, ServiceID string
}

func (c *agentCheck) toHealth(node string) *healthCheck {
	id := cmp.Or(c.ID, c.CheckID, c.Name)
	return &healthCheck{Node: node, CheckID: id, Name: cmp.Or(c.Name, id), Notes: c.Notes, Status: c.Status, ServiceID: c.ServiceID}
}
