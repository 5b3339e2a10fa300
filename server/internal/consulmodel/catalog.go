package consulmodel

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
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
// server's node is always registered and has a SerfHealth check that is
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
//	"n" node              → JSON Node
//	"s" node "\x00" id    → JSON Service
//	"c" node "\x00" id    → JSON HealthCheck
const (
	bucketCatalog = "consul/catalog"
	catalogTouch  = "\x00consul/catalog"
	// MaxCatalogNodes bounds the registered nodes (this server's own not
	// counted), MaxNodeEntries the services and the checks of one node.
	// Past them a registration is 400 and changes nothing.
	MaxCatalogNodes = 1024
	MaxNodeEntries  = 256
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

// roomFor refuses (Invalid) adding key (absent so far) would pass limit
// records under prefix.
func roomFor(tx *engine.Tx, key, prefix []byte, limit int, what string) error {
	if b := tx.ReadBucket(bucketCatalog); b != nil && b.Get(key) != nil {
		return nil
	}
	if countPrefix(tx, prefix, limit) >= limit {
		return errorf(Invalid, "Too many %s (limit %d)", what, limit)
	}
	return nil
}

var keyCatalogIndex = []byte("catalog-index")

// Check statuses.
const (
	HealthPassing  = "passing"
	HealthWarning  = "warning"
	HealthCritical = "critical"
)

// Node is a registered node, as Consul answers it.
type Node struct {
	ID              string
	Node            string
	Address         string
	Datacenter      string
	TaggedAddresses map[string]string
	Meta            map[string]string
	CreateIndex     uint64
	ModifyIndex     uint64
}

// Service is a registered service.
type Service struct {
	ID      string
	Service string
	Tags    []string
	Address string
	Port    int
}

// HealthCheck is a registered check, as Consul answers it.
type HealthCheck struct {
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

// Registration is the body of PUT /v1/catalog/register.
type Registration struct {
	ID              string
	Node            string
	Address         string
	Datacenter      string
	TaggedAddresses map[string]string
	NodeMeta        map[string]string
	Service         *Service
	Check           *HealthCheck
	Checks          []*HealthCheck
	SkipNodeUpdate  bool
}

func catalogKey(kind, node, id string) []byte { return []byte(kind + node + "\x00" + id) }

func (m *Model) selfNode(addr string) *Node {
	return &Node{ID: NodeID(m.opts.NodeName), Node: m.opts.NodeName, Address: addr, Datacenter: m.opts.Datacenter,
		TaggedAddresses: map[string]string{"lan": addr}, Meta: map[string]string{}, CreateIndex: 1, ModifyIndex: 1}
}

func (m *Model) selfSerfHealth() *HealthCheck {
	return &HealthCheck{Node: m.opts.NodeName, CheckID: SerfHealth, Name: "Serf Health Status", Status: HealthPassing,
		Output: "Agent alive and reachable", ServiceTags: []string{}, CreateIndex: 1, ModifyIndex: 1}
}

func decodeJSON[T any](key, v []byte) (*T, error) {
	out := new(T)
	if err := json.Unmarshal(v, out); err != nil {
		return nil, fmt.Errorf("%w: catalog %q: %w", engine.ErrCorrupt, key, err)
	}
	return out, nil
}

func loadJSON[T any](tx *engine.Tx, key []byte) (*T, bool, error) {
	b := tx.ReadBucket(bucketCatalog)
	if b == nil {
		return nil, false, nil
	}
	v := b.Get(key)
	if v == nil {
		return nil, false, nil
	}
	out, err := decodeJSON[T](key, v)
	return out, err == nil, err
}

func scanJSON[T any](tx *engine.Tx, prefix []byte) ([]*T, error) {
	b := tx.ReadBucket(bucketCatalog)
	if b == nil {
		return nil, nil
	}
	var out []*T
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		t, err := decodeJSON[T](k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// putJSON stores v under key and records the catalog's change.
func putJSON(tx *engine.Tx, key []byte, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketCatalog).Put(key, buf); err != nil {
		return err
	}
	return catalogChanged(tx)
}

// deleteJSON deletes key and records the catalog's change.
func deleteJSON(tx *engine.Tx, key []byte) error {
	if err := tx.Bucket(bucketCatalog).Delete(key); err != nil {
		return err
	}
	return catalogChanged(tx)
}

func catalogChanged(tx *engine.Tx) error {
	tx.Touch(catalogTouch)
	return putIndex(tx, keyCatalogIndex)
}

// CatalogIndex is the X-Consul-Index of catalog reads: the last index
// that changed the catalog, at least 1.
func CatalogIndex(tx *engine.Tx) uint64 { return readIndex(tx, keyCatalogIndex) }

// node returns a registered node (this server's own included).
func (m *Model) node(tx *engine.Tx, name, addr string) (*Node, bool, error) {
	if name == m.opts.NodeName {
		return m.selfNode(addr), true, nil
	}
	return loadJSON[Node](tx, []byte("n"+name))
}

// check returns a check of a node (serfHealth of this server's node
// included).
func (m *Model) check(tx *engine.Tx, node, id string) (*HealthCheck, bool, error) {
	if node == m.opts.NodeName && id == SerfHealth {
		return m.selfSerfHealth(), true, nil
	}
	return loadJSON[HealthCheck](tx, catalogKey("c", node, id))
}

// Nodes returns the registered nodes, this server's own (at address
// addr) included, by name, and the catalog's index.
func (m *Model) Nodes(addr string) (nodes []*Node, index uint64, err error) {
	err = m.e.View(func(tx *engine.Tx) error {
		var err error
		if nodes, err = scanJSON[Node](tx, []byte("n")); err != nil {
			return err
		}
		nodes = append(nodes, m.selfNode(addr))
		index = CatalogIndex(tx)
		return nil
	})
	slices.SortFunc(nodes, func(a, b *Node) int { return strings.Compare(a.Node, b.Node) })
	return nodes, index, err
}

// NodeChecks returns the checks of node (serfHealth first on this
// server's own) and the catalog's index.
func (m *Model) NodeChecks(node string) (checks []*HealthCheck, index uint64, err error) {
	err = m.e.View(func(tx *engine.Tx) error {
		var err error
		checks, err = m.nodeChecks(tx, node)
		index = CatalogIndex(tx)
		return err
	})
	return checks, index, err
}

func (m *Model) nodeChecks(tx *engine.Tx, node string) ([]*HealthCheck, error) {
	out, err := scanJSON[HealthCheck](tx, []byte("c"+node+"\x00"))
	if err != nil {
		return nil, err
	}
	if node == m.opts.NodeName {
		out = slices.Insert(out, 0, m.selfSerfHealth())
	}
	return out, nil
}

// sessionChecksOK applies Consul's session-create rules to se: its node
// is registered, every check it names exists on that node and is not
// critical.
func (m *Model) sessionChecksOK(tx *engine.Tx, se *Session) error {
	if _, ok, err := m.node(tx, se.Node, ""); err != nil || !ok {
		return cmp.Or(err, errorf(Rejected, "Missing node registration"))
	}
	for _, id := range sessionCheckIDs(se) {
		c, ok, err := m.check(tx, se.Node, id)
		if err != nil || !ok {
			return cmp.Or(err, errorf(Rejected, "Missing check '%s' registration", id))
		}
		if c.Status == HealthCritical {
			return errorf(Rejected, "Check '%s' is in %s state", id, c.Status)
		}
	}
	return nil
}

// sessionCheckIDs are the checks se depends on: NodeChecks (which Checks
// fills when NodeChecks is absent) and ServiceChecks.
func sessionCheckIDs(se *Session) []string {
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
func (m *Model) invalidateForCheck(tx *engine.Tx, node, id string) ([]string, error) {
	all, err := ListSessions(tx)
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, se := range all {
		if se.Node != node || (id != "" && !slices.Contains(sessionCheckIDs(se), id)) {
			continue
		}
		if err := m.invalidateTx(tx, se); err != nil {
			return nil, err
		}
		gone = append(gone, se.ID)
	}
	return gone, nil
}

// putCheck stores c (after validation) and, if it is critical,
// invalidates the sessions that name it.
func (m *Model) putCheck(tx *engine.Tx, c *HealthCheck) ([]string, error) {
	if c.CheckID == "" {
		return nil, errorf(Invalid, "Missing CheckID")
	}
	if c.Node == m.opts.NodeName && c.CheckID == SerfHealth {
		return nil, errorf(Invalid, "serfHealth is managed by this server")
	}
	if c.Status == "" {
		c.Status = HealthCritical
	}
	switch c.Status {
	case HealthPassing, HealthWarning, HealthCritical:
	default:
		return nil, errorf(Invalid, "Invalid check status: '%s'", c.Status)
	}
	c.ServiceTags = nonNil(c.ServiceTags)
	if c.ServiceID != "" {
		svc, ok, err := loadJSON[Service](tx, catalogKey("s", c.Node, c.ServiceID))
		if err != nil || !ok {
			return nil, cmp.Or(err, errorf(Rejected, "Missing service registration"))
		}
		c.ServiceName, c.ServiceTags = svc.Service, nonNil(svc.Tags)
	}
	if err := roomFor(tx, catalogKey("c", c.Node, c.CheckID), []byte("c"+c.Node+"\x00"), MaxNodeEntries, "checks on node "+c.Node); err != nil {
		return nil, err
	}
	c.CreateIndex, c.ModifyIndex = tx.Index(), tx.Index()
	old, ok, err := loadJSON[HealthCheck](tx, catalogKey("c", c.Node, c.CheckID))
	if err != nil {
		return nil, err
	}
	if ok {
		c.CreateIndex = old.CreateIndex
	}
	if err := putJSON(tx, catalogKey("c", c.Node, c.CheckID), c); err != nil {
		return nil, err
	}
	if c.Status == HealthCritical {
		return m.invalidateForCheck(tx, c.Node, c.CheckID)
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
func (m *Model) register(tx *engine.Tx, reg *Registration, addr string) ([]string, error) {
	if reg.Node == "" {
		return nil, errorf(Invalid, "Must provide node")
	}
	if reg.Datacenter != "" && reg.Datacenter != m.opts.Datacenter {
		return nil, errorf(Rejected, "No path to datacenter")
	}
	_, ok, err := m.node(tx, reg.Node, addr)
	if err != nil {
		return nil, err
	}
	if !ok || !reg.SkipNodeUpdate {
		if err := m.registerNode(tx, reg); err != nil {
			return nil, err
		}
	}
	if s := reg.Service; s != nil {
		if s.Service == "" {
			return nil, errorf(Invalid, "Must provide service name with ID")
		}
		if s.ID == "" {
			s.ID = s.Service
		}
		s.Tags = nonNil(s.Tags)
		if err := roomFor(tx, catalogKey("s", reg.Node, s.ID), []byte("s"+reg.Node+"\x00"), MaxNodeEntries, "services on node "+reg.Node); err != nil {
			return nil, err
		}
		if err := putJSON(tx, catalogKey("s", reg.Node, s.ID), s); err != nil {
			return nil, err
		}
	}
	checks := reg.Checks
	if reg.Check != nil {
		checks = append([]*HealthCheck{reg.Check}, checks...)
	}
	var gone []string
	for _, c := range checks {
		if c.Node == "" {
			c.Node = reg.Node
		}
		if c.Node != reg.Node {
			return nil, errorf(Invalid, "Check node %s does not match node %s", c.Node, reg.Node)
		}
		g, err := m.putCheck(tx, c)
		if err != nil {
			return nil, err
		}
		gone = append(gone, g...)
	}
	return gone, nil
}

// registerNode stores the node of reg (not this server's own).
func (m *Model) registerNode(tx *engine.Tx, reg *Registration) error {
	if reg.Node == m.opts.NodeName {
		if !reg.SkipNodeUpdate {
			return errorf(Invalid, "This server's own node cannot be re-registered; use SkipNodeUpdate")
		}
		return nil
	}
	if reg.Address == "" {
		return errorf(Invalid, "Must provide address if SkipNodeUpdate is not set")
	}
	key := []byte("n" + reg.Node)
	if err := roomFor(tx, key, []byte("n"), MaxCatalogNodes, "nodes"); err != nil {
		return err
	}
	n := &Node{ID: reg.ID, Node: reg.Node, Address: reg.Address, Datacenter: m.opts.Datacenter,
		TaggedAddresses: reg.TaggedAddresses, Meta: reg.NodeMeta, CreateIndex: tx.Index(), ModifyIndex: tx.Index()}
	old, ok, err := loadJSON[Node](tx, key)
	if err != nil {
		return err
	}
	if ok {
		n.CreateIndex = old.CreateIndex
	}
	if n.TaggedAddresses == nil {
		n.TaggedAddresses = map[string]string{}
	}
	if n.Meta == nil {
		n.Meta = map[string]string{}
	}
	return putJSON(tx, key, n)
}

// deregister removes a check, a service (with its checks) or a node (with
// everything on it), invalidating the sessions that depended on them.
func (m *Model) deregister(tx *engine.Tx, node, serviceID, checkID string) ([]string, error) {
	if node == "" {
		return nil, errorf(Invalid, "Must provide node")
	}
	var gone []string
	delCheck := func(c *HealthCheck) error {
		if err := deleteJSON(tx, catalogKey("c", c.Node, c.CheckID)); err != nil {
			return err
		}
		g, err := m.invalidateForCheck(tx, c.Node, c.CheckID)
		gone = append(gone, g...)
		return err
	}
	delChecks := func(serviceID string) error {
		checks, err := scanJSON[HealthCheck](tx, []byte("c"+node+"\x00"))
		if err != nil {
			return err
		}
		for _, c := range checks {
			if serviceID == "" || c.ServiceID == serviceID {
				if err := delCheck(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	switch {
	case checkID != "":
		c, ok, err := loadJSON[HealthCheck](tx, catalogKey("c", node, checkID))
		if err == nil && ok {
			err = delCheck(c)
		}
		return gone, err
	case serviceID != "":
		if err := delChecks(serviceID); err != nil {
			return nil, err
		}
		return gone, deleteIfPresent(tx, catalogKey("s", node, serviceID))
	}
	if node == m.opts.NodeName {
		return nil, errorf(Invalid, "This server's own node cannot be deregistered")
	}
	if err := delChecks(""); err != nil {
		return nil, err
	}
	cb := tx.Bucket(bucketCatalog)
	for _, kind := range []string{"s", "c"} {
		var keys [][]byte
		c := cb.Cursor()
		p := []byte(kind + node + "\x00")
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			keys = append(keys, slices.Clone(k))
		}
		for _, k := range keys {
			if err := cb.Delete(k); err != nil {
				return nil, err
			}
		}
	}
	if err := deleteIfPresent(tx, []byte("n"+node)); err != nil {
		return nil, err
	}
	g, err := m.invalidateForCheck(tx, node, "")
	return append(gone, g...), err
}

// deleteIfPresent deletes key, recording the catalog's change, when it
// exists.
func deleteIfPresent(tx *engine.Tx, key []byte) error {
	if tx.Bucket(bucketCatalog).Get(key) == nil {
		return nil
	}
	return deleteJSON(tx, key)
}

// catalogWrite runs fn in one Update and disarms the timers of the
// sessions it invalidated.
func (m *Model) catalogWrite(ctx context.Context, fn func(tx *engine.Tx) ([]string, error)) error {
	var gone []string
	if _, err := m.e.Update(ctx, func(tx *engine.Tx) error {
		var err error
		gone, err = fn(tx)
		return err
	}); err != nil {
		return err
	}
	for _, id := range gone {
		m.sess.disarm(id)
	}
	return nil
}

// Register applies a catalog registration (PUT /v1/catalog/register, or
// the agent's service and check registration on this server's node, at
// address addr) in one transaction; a check registered critical
// invalidates the sessions naming it.
func (m *Model) Register(ctx context.Context, reg *Registration, addr string) error {
	return m.catalogWrite(ctx, func(tx *engine.Tx) ([]string, error) { return m.register(tx, reg, addr) })
}

// Deregister removes a check (checkID set), a service with its checks
// (serviceID set) or a node with everything on it, and invalidates the
// sessions that depended on them.
func (m *Model) Deregister(ctx context.Context, node, serviceID, checkID string) error {
	return m.catalogWrite(ctx, func(tx *engine.Tx) ([]string, error) { return m.deregister(tx, node, serviceID, checkID) })
}

// PutCheck registers c; a critical check invalidates the sessions naming
// it.
func (m *Model) PutCheck(ctx context.Context, c *HealthCheck) error {
	return m.catalogWrite(ctx, func(tx *engine.Tx) ([]string, error) { return m.putCheck(tx, c) })
}

// SetCheck sets the status and output of check id of this server's node
// (/v1/agent/check/pass|warn|fail|update); an unknown check is NotFound.
func (m *Model) SetCheck(ctx context.Context, id, status, output string) error {
	return m.catalogWrite(ctx, func(tx *engine.Tx) ([]string, error) {
		c, ok, err := loadJSON[HealthCheck](tx, catalogKey("c", m.opts.NodeName, id))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errorf(NotFound, "Unknown check ID %q. Ensure that the check ID is passed, not the check name.", id)
		}
		c.Status, c.Output = status, output
		return m.putCheck(tx, c)
	})
}

// NodeID derives a stable UUID-shaped node ID from the node name.
func NodeID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return FormatUUID([16]byte(sum[:16]))
}

// FormatUUID formats b as a UUID.
func FormatUUID(b [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
