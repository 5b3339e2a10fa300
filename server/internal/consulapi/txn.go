package consulapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/latchkey/latchkey/server/internal/consulmodel"
)

const docsTxnMaxReqLen = "https://www.consul.io/docs/agent/config/config-files#txn_max_req_len"

// txnOp is one element of a /v1/txn body. Only KV ops are served; Node,
// Service and Check ops are answered with a 409 error entry.
type txnOp struct {
	KV      *consulmodel.Op // its fields are Consul's TxnKVOp's
	Node    json.RawMessage
	Service json.RawMessage
	Check   json.RawMessage
}

type txnResult struct {
	KV *dirEntry
}

// txnError is one op that did not apply: consulmodel's, whose fields are
// Consul's (OpIndex, What).
type txnError = consulmodel.TxnError

type txnResponse struct {
	Results []txnResult
	Errors  []txnError
}

// response is the wire answer of a txn's results and refusals.
func response(results []consulmodel.KV, errs []txnError) txnResponse {
	resp := txnResponse{Errors: errs}
	for _, kv := range results {
		resp.Results = append(resp.Results, txnResult{KV: toDir(kv)})
	}
	return resp
}

// modelOps are the KV ops of a txn whose ops are all KV ops.
func modelOps(ops []txnOp) []consulmodel.Op {
	out := make([]consulmodel.Op, len(ops))
	for i, op := range ops {
		out[i] = *op.KV
	}
	return out
}

// txnReadResponse is the answer to a read-only txn: the query meta rides in
// the body, not in X-Consul-Index.
type txnReadResponse struct {
	txnResponse
	Index            uint64
	LastContact      int64
	KnownLeader      bool
	ConsistencyLevel string
}

func (h *Handler) serveTxn(w http.ResponseWriter, r *http.Request, q url.Values) error {
	if r.Method != http.MethodPut {
		if r.Method == http.MethodOptions {
			w.Header().Set("Allow", "OPTIONS,PUT")
			w.WriteHeader(http.StatusOK)
			return nil
		}
		return methodNotAllowed(r.Method, "OPTIONS,PUT")
	}
	// Consul decodes the body first, then parses the query options of a
	// read-only txn only; a write txn reads just dc (and the token).
	ops, err := h.decodeTxn(w, r)
	if err != nil {
		return err
	}
	writes := false
	var errs []txnError
	for i, op := range ops {
		switch {
		case op.KV == nil:
			errs = append(errs, txnError{OpIndex: i, What: "latchkey serves KV operations only"})
		case consulmodel.IsWriteVerb(op.KV.Verb):
			writes = true
		}
	}
	if len(errs) > 0 {
		writeJSON(w, q, http.StatusConflict, txnResponse{Errors: errs})
		return nil
	}
	if !writes {
		qo, err := h.parseQuery(q)
		if err != nil {
			return err
		}
		return h.txnRead(w, r, q, qo, ops)
	}
	if err := h.parseDC(q); err != nil {
		return err
	}
	results, errs, err := h.m.Txn(r.Context(), modelOps(ops))
	switch {
	case err != nil:
		return err
	case len(errs) > 0:
		writeJSON(w, q, http.StatusConflict, txnResponse{Errors: errs})
	default:
		writeJSON(w, q, 0, response(results, nil))
	}
	return nil
}

// txnRead runs a read-only txn in one snapshot; it never blocks.
func (h *Handler) txnRead(w http.ResponseWriter, r *http.Request, q url.Values, qo queryOptions, ops []txnOp) error {
	results, errs, index, err := h.m.ReadTxn(modelOps(ops))
	if err != nil {
		return err
	}
	resp := txnReadResponse{txnResponse: response(results, errs), Index: index}
	resp.KnownLeader, resp.ConsistencyLevel = true, qo.consistency
	setLeaderMeta(w, qo.consistency)
	status := http.StatusOK
	if len(resp.Errors) > 0 {
		status = http.StatusConflict
	}
	writeJSON(w, q, status, resp)
	return nil
}

// decodeTxn reads and checks a txn body: size (413), JSON (400), op count
// and value sizes (413), key lengths (400).
func (h *Handler) decodeTxn(w http.ResponseWriter, r *http.Request) ([]txnOp, error) {
	limit := h.opts.MaxTxnBody
	if r.ContentLength > limit {
		return nil, errorf(http.StatusRequestEntityTooLarge, "Request body(%d bytes) too large, max size: %d bytes. See %s.", r.ContentLength, limit, docsTxnMaxReqLen)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errorf(http.StatusRequestEntityTooLarge, "Request body too large, max size: %d bytes. See %s.", limit, docsTxnMaxReqLen)
	}
	if err != nil {
		return nil, err
	}
	var ops []txnOp
	if err := json.Unmarshal(body, &ops); err != nil {
		return nil, badRequest("Failed to parse body: " + err.Error())
	}
	if len(ops) > h.opts.MaxTxnOps {
		return nil, errorf(http.StatusRequestEntityTooLarge, "Transaction contains too many operations (%d > %d)", len(ops), h.opts.MaxTxnOps)
	}
	for i, op := range ops {
		if op.KV == nil {
			continue
		}
		if n := int64(len(op.KV.Value)); n > h.opts.MaxValueSize {
			return nil, errorf(http.StatusRequestEntityTooLarge, "Value for key %q is too large (%d > %d bytes)", op.KV.Key, n, h.opts.MaxValueSize)
		}
		if len(op.KV.Key) > h.opts.MaxKeyLen {
			return nil, badRequest(fmt.Sprintf("Key too long (%d bytes > %d bytes)", len(op.KV.Key), h.opts.MaxKeyLen))
		}
		// The tree verbs take a prefix, which may be empty (everything);
		// every other verb names one key, and no key is empty.
		if op.KV.Key == "" && consulmodel.IsKeyVerb(op.KV.Verb) {
			return nil, badRequest(fmt.Sprintf("Missing key name (operation %d, %s)", i, op.KV.Verb))
		}
	}
	return ops, nil
}
