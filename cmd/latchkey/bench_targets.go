package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// benchTarget is a server whose durable CAS the bench measures. Every
// method is one HTTP request.
type benchTarget interface {
	name() string
	// create writes key only if it does not exist; applied reports whether
	// it did.
	create(ctx context.Context, key string, val []byte) (applied bool, err error)
	// read returns the key's current revision (0: absent).
	read(ctx context.Context, key string) (rev uint64, err error)
	// cas writes key only if its revision is still rev (0: absent).
	cas(ctx context.Context, key string, val []byte, rev uint64) (applied bool, err error)
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

// consulTarget speaks Consul's KV HTTP API: PUT /v1/kv/K?cas=N answers
// true or false; GET /v1/kv/K gives the ModifyIndex.
type consulTarget struct {
	base  string // http://host:port
	token string
	c     *http.Client
}

func (t *consulTarget) name() string { return "latchkey" }

func (t *consulTarget) put(ctx context.Context, key string, val []byte, cas uint64) (bool, error) {
	u := t.base + "/v1/kv/" + escapeKey(key) + "?cas=" + strconv.FormatUint(cas, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(val))
	if err != nil {
		return false, err
	}
	t.auth(req)
	code, body, _, err := do(t.c, req)
	if err != nil {
		return false, err
	}
	if code != http.StatusOK {
		return false, fmt.Errorf("PUT %s: %d %s", key, code, strings.TrimSpace(string(body)))
	}
	return strings.TrimSpace(string(body)) == "true", nil
}

func (t *consulTarget) auth(req *http.Request) {
	if t.token != "" {
		req.Header.Set("X-Consul-Token", t.token)
	}
}

func (t *consulTarget) create(ctx context.Context, key string, val []byte) (bool, error) {
	return t.put(ctx, key, val, 0)
}

func (t *consulTarget) cas(ctx context.Context, key string, val []byte, rev uint64) (bool, error) {
	return t.put(ctx, key, val, rev)
}

func (t *consulTarget) read(ctx context.Context, key string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.base+"/v1/kv/"+escapeKey(key), nil)
	if err != nil {
		return 0, err
	}
	t.auth(req)
	code, body, _, err := do(t.c, req)
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

// etcdTarget speaks etcd's v3 JSON gateway (POST /v3/kv/txn and
// /v3/kv/range, base64 keys and values), so the bench needs no etcd
// client library. A CAS is a txn comparing mod_revision (create_revision
// = 0 for create-only), exactly what etcd's own clients send.
type etcdTarget struct {
	base string // http://host:port
	c    *http.Client
}

func (t *etcdTarget) name() string { return "etcd" }

func b64(s []byte) string { return base64.StdEncoding.EncodeToString(s) }

func (t *etcdTarget) post(ctx context.Context, path string, body any, out any) error {
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

func (t *etcdTarget) txn(ctx context.Context, key string, val []byte, target, field string, rev uint64) (bool, error) {
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

func (t *etcdTarget) create(ctx context.Context, key string, val []byte) (bool, error) {
	return t.txn(ctx, key, val, "CREATE", "create_revision", 0)
}

func (t *etcdTarget) cas(ctx context.Context, key string, val []byte, rev uint64) (bool, error) {
	if rev == 0 {
		return t.create(ctx, key, val)
	}
	return t.txn(ctx, key, val, "MOD", "mod_revision", rev)
}

func (t *etcdTarget) read(ctx context.Context, key string) (uint64, error) {
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
