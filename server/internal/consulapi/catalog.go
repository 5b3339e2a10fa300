package consulapi

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/latchkey/latchkey/server/internal/consulmodel"
)

// The catalog's HTTP side: the PUT endpoints of /v1/catalog/ and the
// agent's service and check registration. What they change, and the
// session rules that come with it, is consulmodel's (catalog.go there).

// maxCatalogBody bounds a register body.
const maxCatalogBody = 64 << 10

// answerCatalogWrite answers a catalog write that applied: true on
// /v1/catalog/, an empty 200 on the agent's endpoints, as Consul does.
func answerCatalogWrite(w http.ResponseWriter, r *http.Request, q url.Values, err error) error {
	if err != nil {
		return err
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
	write := func(fn func() error) (bool, error) {
		if err := h.parseDC(q); err != nil {
			return true, err
		}
		return true, answerCatalogWrite(w, r, q, fn())
	}
	ctx := r.Context()
	addr := h.serverAddr(r)
	self := h.opts.NodeName
	switch {
	case path == "/v1/catalog/register":
		var reg consulmodel.Registration
		if err := readBody(w, r, &reg); err != nil {
			return true, err
		}
		return write(func() error { return h.m.Register(ctx, &reg, addr) })
	case path == "/v1/catalog/deregister":
		var d struct{ Node, ServiceID, CheckID string }
		if err := readBody(w, r, &d); err != nil {
			return true, err
		}
		return write(func() error { return h.m.Deregister(ctx, d.Node, d.ServiceID, d.CheckID) })
	case path == "/v1/agent/service/register":
		var s struct {
			consulmodel.Service
			Name   string
			Check  *agentCheck
			Checks []*agentCheck
		}
		if err := readBody(w, r, &s); err != nil {
			return true, err
		}
		svc := s.Service
		if svc.Service == "" {
			svc.Service = s.Name
		}
		reg := &consulmodel.Registration{Node: self, SkipNodeUpdate: true, Service: &svc}
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
		return write(func() error { return h.m.Register(ctx, reg, addr) })
	case strings.HasPrefix(path, "/v1/agent/service/deregister/"):
		id := strings.TrimPrefix(path, "/v1/agent/service/deregister/")
		return write(func() error { return h.m.Deregister(ctx, self, id, "") })
	case path == "/v1/agent/check/register":
		var c agentCheck
		if err := readBody(w, r, &c); err != nil {
			return true, err
		}
		hc := c.toHealth(self)
		return write(func() error { return h.m.PutCheck(ctx, hc) })
	case strings.HasPrefix(path, "/v1/agent/check/deregister/"):
		id := strings.TrimPrefix(path, "/v1/agent/check/deregister/")
		return write(func() error { return h.m.Deregister(ctx, self, "", id) })
	case strings.HasPrefix(path, "/v1/agent/check/"):
		verb, id, _ := strings.Cut(strings.TrimPrefix(path, "/v1/agent/check/"), "/")
		status := map[string]string{"pass": consulmodel.HealthPassing, "warn": consulmodel.HealthWarning,
			"fail": consulmodel.HealthCritical, "update": ""}
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
		return write(func() error { return h.m.SetCheck(ctx, id, st, output) })
	}
	return false, nil
}

// agentCheck is a check definition as the agent takes it.
type agentCheck struct {
	ID, CheckID, Name, Notes, Status, ServiceID string
}

func (c *agentCheck) toHealth(node string) *consulmodel.HealthCheck {
	id := cmp.Or(c.ID, c.CheckID, c.Name)
	return &consulmodel.HealthCheck{Node: node, CheckID: id, Name: cmp.Or(c.Name, id), Notes: c.Notes, Status: c.Status, ServiceID: c.ServiceID}
}
