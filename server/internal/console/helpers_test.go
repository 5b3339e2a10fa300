package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	consul "github.com/hashicorp/consul/api"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/servertest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
)

// fixture is a real in-process server with data written through its real
// APIs: the lease and publish packages over a consul:// store, the Consul
// API, and an S3 client.
type fixture struct {
	t     testing.TB
	srv   *servertest.Server
	store store.Store
	token string
	// session is the console cookie of a login made with every credential
	// the server has ("Name=value").
	session string
}

func start(t testing.TB, aclToken string) *fixture {
	t.Helper()
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{ACLToken: aclToken}})
	s, err := consulstore.Open(context.Background(), &consulstore.Options{Address: srv.Addr, Token: aclToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &fixture{t: t, srv: srv, store: s, token: aclToken}
	f.session = f.login(url.Values{"token": {aclToken}, "access_key": {srv.AccessKey}, "secret_key": {srv.SecretKey}})
	return f
}

// login posts the login form and returns the session cookie it sets
// ("Name=value"), failing unless the login succeeds.
func (f *fixture) login(form url.Values) string {
	f.t.Helper()
	for k, v := range form {
		if v[0] == "" {
			delete(form, k)
		}
	}
	resp := f.postLogin(form)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		f.t.Fatalf("login: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	c := resp.Cookies()[0]
	return c.Name + "=" + c.Value
}

// postLogin posts the login form as a same-origin browser would.
func (f *fixture) postLogin(form url.Values) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest("POST", f.srv.URL+"/ui/login", strings.NewReader(form.Encode()))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", f.srv.URL)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// getIn is get with the fixture's console session.
func (f *fixture) getIn(path string) (int, http.Header, []byte) {
	f.t.Helper()
	return f.get(path, "Cookie", f.session)
}

func (f *fixture) consul() *consul.Client {
	cfg := consul.DefaultConfig()
	cfg.Address, cfg.Token = f.srv.Addr, f.token
	c, err := consul.NewClient(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) s3() *minio.Client {
	c, err := minio.New(f.srv.Addr, &minio.Options{Creds: credentials.NewStaticV4(f.srv.AccessKey, f.srv.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// bucket makes the bucket name through the S3 API, versioned when asked.
func (f *fixture) bucket(name string, versioned bool) {
	f.t.Helper()
	ctx, mc := context.Background(), f.s3()
	if err := mc.MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		f.t.Fatal(err)
	}
	if !versioned {
		return
	}
	if err := mc.EnableVersioning(ctx, name); err != nil {
		f.t.Fatal(err)
	}
}

// putObject writes body at bucket/key through the S3 API, with
// contentType ("" for the default).
func (f *fixture) putObject(bucket, key, body, contentType string) {
	f.t.Helper()
	if _, err := f.s3().PutObject(context.Background(), bucket, key, strings.NewReader(body), int64(len(body)),
		minio.PutObjectOptions{ContentType: contentType}); err != nil {
		f.t.Fatal(err)
	}
}

// acquire takes a real lease at key.
func (f *fixture) acquire(key, holder string) *lease.Lease {
	f.t.Helper()
	lk, err := lease.NewLocker(f.store, key, &lease.Options{Holder: holder, TTL: time.Minute})
	if err != nil {
		f.t.Fatal(err)
	}
	l, err := lk.TryAcquire(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

// staleLease writes the record a holder that died an hour ago leaves
// behind: the real record format, renewed long past its TTL.
func (f *fixture) staleLease(key, holder string) {
	f.t.Helper()
	old := time.Now().Add(-time.Hour).UTC()
	rec := lease.Record{Holder: holder, Nonce: "0123456789abcdef0123456789abcdef", Token: 7, TTL: 15 * time.Second, Acquired: old, Renewed: old}
	b, err := json.Marshal(rec)
	if err != nil {
		f.t.Fatal(err)
	}
	f.put(key, b)
}

func (f *fixture) put(key string, v []byte) {
	f.t.Helper()
	if _, err := f.store.Put(context.Background(), key, v, store.Condition{}); err != nil {
		f.t.Fatal(err)
	}
}

// publishGen commits one generation of files under prefix.
func (f *fixture) publishGen(prefix string, files map[string]string) string {
	f.t.Helper()
	ctx := context.Background()
	w, err := publish.Begin(ctx, f.store, prefix, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for name, body := range files {
		if err := w.Put(ctx, name, strings.NewReader(body)); err != nil {
			f.t.Fatal(err)
		}
	}
	if _, err := w.Commit(ctx); err != nil {
		f.t.Fatal(err)
	}
	return w.ID()
}

// get fetches path with the given headers and returns status and body.
func (f *fixture) get(path string, hdr ...string) (int, http.Header, []byte) {
	f.t.Helper()
	req, err := http.NewRequest("GET", f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// api fetches a JSON endpoint into v, failing unless it answers 200.
func (f *fixture) api(path string, v any) {
	f.t.Helper()
	code, _, b := f.getIn(path)
	if code != http.StatusOK {
		f.t.Fatalf("GET %s: %d %s", path, code, b)
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		f.t.Fatalf("GET %s: %v in %s", path, err, b)
	}
}
