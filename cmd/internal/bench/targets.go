package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
	"github.com/latchkey/latchkey/store/etcdstore"
)

// benchTarget is a server whose durable CAS the bench measures, through
// the client its own users use. Every method is one request.
type benchTarget interface {
	name() string
	// create writes key only if it does not exist; applied reports whether
	// it did.
	create(ctx context.Context, key string, val []byte) (applied bool, err error)
	// read returns the key's current revision (0: absent).
	read(ctx context.Context, key string) (rev uint64, err error)
	// cas writes key only if its revision is still rev (0: absent).
	cas(ctx context.Context, key string, val []byte, rev uint64) (applied bool, err error)
	// addr is the host:port the target listens on, to find its process.
	addr() string
	// openStore opens a store.Store client of the target of its own (the
	// update pattern).
	openStore(ctx context.Context) (store.Store, error)
}

// maxBenchBody bounds what the bench reads from any response.
const maxBenchBody = 1 << 20

func do(c *http.Client, req *http.Request) (int, []byte, http.Header, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBenchBody))
	return resp.StatusCode, b, resp.Header, err
}

func hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Host
}

// consulTarget speaks Consul's KV HTTP API: PUT /v1/kv/K?cas=N answers
// true or false; GET /v1/kv/K gives the ModifyIndex.
type consulTarget struct {
	base  string // http://host:port
	token string
	c     benchHTTP
}

func (t *consulTarget) name() string { return "latchkey" }
func (t *consulTarget) addr() string { return hostOf(t.base) }

func (t *consulTarget) openStore(ctx context.Context) (store.Store, error) {
	u, err := url.Parse(t.base)
	if err != nil {
		return nil, err
	}
	return consulstore.Open(ctx, &consulstore.Options{Address: u.Host, Scheme: u.Scheme, Token: t.token})
}

func (t *consulTarget) put(ctx context.Context, key string, val []byte, cas uint64) (bool, error) {
	code, body, err := t.c.do(ctx, http.MethodPut, "/v1/kv/"+escapeKey(key)+"?cas="+strconv.FormatUint(cas, 10), val)
	if err != nil {
		return false, err
	}
	if code != http.StatusOK {
		return false, fmt.Errorf("PUT %s: %d %s", key, code, strings.TrimSpace(string(body)))
	}
	return strings.TrimSpace(string(body)) == "true", nil
}

func (t *consulTarget) create(ctx context.Context, key string, val []byte) (bool, error) {
	return t.put(ctx, key, val, 0)
}

func (t *consulTarget) cas(ctx context.Context, key string, val []byte, rev uint64) (bool, error) {
	return t.put(ctx, key, val, rev)
}

func (t *consulTarget) read(ctx context.Context, key string) (uint64, error) {
	code, body, err := t.c.do(ctx, http.MethodGet, "/v1/kv/"+escapeKey(key), nil)
	switch {
	case err != nil:
		return 0, err
	case code == http.StatusNotFound:
		return 0, nil
	case code != http.StatusOK:
		return 0, fmt.Errorf("GET %s: %d %s", key, code, strings.TrimSpace(string(body)))
	}
	var kvs []struct{ ModifyIndex uint64 }
	if err := json.Unmarshal(body, &kvs); err != nil || len(kvs) != 1 {
		return 0, fmt.Errorf("GET %s: bad body %.100q", key, body)
	}
	return kvs[0].ModifyIndex, nil
}

func escapeKey(k string) string {
	parts := strings.Split(k, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// etcdTarget drives etcd through its own Go client (clientv3, gRPC), as
// every etcd user does: a read is a Get, a CAS a Txn comparing the key's
// mod_revision (create_revision = 0 for create-only).
type etcdTarget struct {
	endpoint string // host:port
	c        *clientv3.Client
}

func (t *etcdTarget) name() string { return "etcd" }
func (t *etcdTarget) addr() string { return t.endpoint }

func (t *etcdTarget) openStore(ctx context.Context) (store.Store, error) {
	return etcdstore.Open(ctx, &etcdstore.Options{Endpoints: []string{t.endpoint}})
}

func (t *etcdTarget) txn(ctx context.Context, key string, val []byte, cmp clientv3.Cmp) (bool, error) {
	resp, err := t.c.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, string(val))).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

func (t *etcdTarget) create(ctx context.Context, key string, val []byte) (bool, error) {
	return t.txn(ctx, key, val, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
}

func (t *etcdTarget) cas(ctx context.Context, key string, val []byte, rev uint64) (bool, error) {
	if rev == 0 {
		return t.create(ctx, key, val)
	}
	return t.txn(ctx, key, val, clientv3.Compare(clientv3.ModRevision(key), "=", int64(rev)))
}

func (t *etcdTarget) read(ctx context.Context, key string) (uint64, error) {
	resp, err := t.c.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return uint64(resp.Kvs[0].ModRevision), nil
}

// etcdGatewayTarget speaks etcd's v3 JSON gateway (POST /v3/kv/txn and
// /v3/kv/range, base64 keys and values). It is much slower than the gRPC
// client and is kept only for comparison (--etcd-gateway); its rows are
// labelled etcd-json.
type etcdGatewayTarget struct {
	base string // http://host:port
	c    *http.Client
}

func (t *etcdGatewayTarget) name() string { return "etcd-json" }
func (t *etcdGatewayTarget) addr() string { return hostOf(t.base) }

func (t *etcdGatewayTarget) openStore(context.Context) (store.Store, error) {
	return nil, errors.New("the update pattern needs a store client, and there is none for the JSON gateway")
}

func b64(s []byte) string { return base64.StdEncoding.EncodeToString(s) }

func (t *etcdGatewayTarget) post(ctx context.Context, path string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	code, rb, _, err := do(t.c, req)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("POST %s: %d %s", path, code, strings.TrimSpace(string(rb)))
	}
	return json.Unmarshal(rb, out)
}

func (t *etcdGatewayTarget) txn(ctx context.Context, key string, val []byte, target, field string, rev uint64) (bool, error) {
	k := b64([]byte(key))
	body := map[string]any{
		"compare": []map[string]any{{"target": target, "result": "EQUAL", "key": k, field: strconv.FormatUint(rev, 10)}},
		"success": []map[string]any{{"request_put": map[string]any{"key": k, "value": b64(val)}}},
	}
	var out struct {
		Succeeded bool `json:"succeeded"`
	}
	if err := t.post(ctx, "/v3/kv/txn", body, &out); err != nil {
		return false, err
	}
	return out.Succeeded, nil
}

func (t *etcdGatewayTarget) create(ctx context.Context, key string, val []byte) (bool, error) {
	return t.txn(ctx, key, val, "CREATE", "create_revision", 0)
}

func (t *etcdGatewayTarget) cas(ctx context.Context, key string, val []byte, rev uint64) (bool, error) {
	if rev == 0 {
		return t.create(ctx, key, val)
	}
	return t.txn(ctx, key, val, "MOD", "mod_revision", rev)
}

func (t *etcdGatewayTarget) read(ctx context.Context, key string) (uint64, error) {
	var out struct {
		Kvs []struct {
			ModRevision string `json:"mod_revision"`
		} `json:"kvs"`
	}
	if err := t.post(ctx, "/v3/kv/range", map[string]any{"key": b64([]byte(key))}, &out); err != nil {
		return 0, err
	}
	if len(out.Kvs) == 0 {
		return 0, nil
	}
	return strconv.ParseUint(out.Kvs[0].ModRevision, 10, 64)
}
