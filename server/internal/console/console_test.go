package console_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	consul "github.com/hashicorp/consul/api"
	"github.com/minio/minio-go/v7"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/server/internal/console"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/s3store"
)

type locksJSON struct {
	Locks []struct {
		Key, Kind, Holder, State, Session string
		Token                             uint64
		TTL                               int64 `json:"ttl_ns"`
	}
	Next string
}

func findLock(t *testing.T, f *fixture, prefix, key string) (lk struct {
	Key, Kind, Holder, State, Session string
	Token                             uint64
	TTL                               int64 `json:"ttl_ns"`
}) {
	t.Helper()
	var got locksJSON
	f.api("/-/api/locks?prefix="+url.QueryEscape(prefix), &got)
	for _, l := range got.Locks {
		if l.Key == key {
			return l
		}
	}
	t.Fatalf("lock %q not listed: %+v", key, got)
	return lk
}

func TestLeaseHeldThenReleased(t *testing.T) {
	f := start(t, "")
	l := f.acquire("locks/job", "worker-1@host")
	got := findLock(t, f, "locks/", "locks/job")
	if got.State != console.StateHeld || got.Holder != "worker-1@host" || got.Token != l.Token() || got.Kind != "lease" || got.TTL != 60e9 {
		t.Fatalf("held lease shown as %+v, want held by worker-1@host with token %d, TTL 1m", got, l.Token())
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := findLock(t, f, "locks/", "locks/job"); got.State != console.StateReleased {
		t.Fatalf("released lease shown as %+v", got)
	}
	// The HTML page says the same.
	_, _, page := f.getIn("/ui/locks?prefix=locks/")
	if !bytes.Contains(page, []byte("st-released")) || !bytes.Contains(page, []byte("worker-1@host")) {
		t.Fatalf("locks page lacks the released lease:\n%s", page)
	}
}

// A lock released by force (lock release, lease.ForceRelease) shows as
// forced, with its TTL exactly as the record holds it; and "looks stale"
// is the lease package's own rule (StaleAfter), the one lock run and lock
// list use, not a second one.
func TestForcedAndStaleAsTheLeasePackageSays(t *testing.T) {
	f := start(t, "")
	lk, err := lease.NewLocker(f.store, "locks/forced", &lease.Options{Holder: "w@h", TTL: 20*time.Second + 900*time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.TryAcquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := lease.ForceRelease(context.Background(), f.store, "locks/forced", "operator"); err != nil {
		t.Fatal(err)
	}
	if got := findLock(t, f, "locks/", "locks/forced"); got.State != console.StateForced || got.TTL != int64(20*time.Second+900*time.Microsecond) {
		t.Fatalf("lock released by force shown as %+v, want forced with TTL 20.0009s", got)
	}
	// Renewed 1.5 TTLs ago: within StaleAfter (2 TTLs), so not stale yet.
	rec := lease.Record{Holder: "slow@h", Nonce: "00112233445566778899aabbccddeeff", Token: 3, TTL: time.Minute,
		Acquired: time.Now().Add(-90 * time.Second), Renewed: time.Now().Add(-90 * time.Second)}
	b, _ := json.Marshal(rec)
	f.put("locks/slow", b)
	if got := findLock(t, f, "locks/", "locks/slow"); got.State != console.StateHeld {
		t.Fatalf("record renewed 1.5 TTLs ago shown as %+v, want held (lease.StaleAfter is %v)", got, lease.StaleAfter(time.Minute))
	}
}

func TestStaleLease(t *testing.T) {
	f := start(t, "")
	f.staleLease("locks/crashed", "gone@host")
	f.acquire("locks/live", "alive@host")
	if got := findLock(t, f, "locks/", "locks/crashed"); got.State != console.StateStale || got.Token != 7 {
		t.Fatalf("stale lease shown as %+v", got)
	}
	if got := findLock(t, f, "locks/", "locks/live"); got.State != console.StateHeld {
		t.Fatalf("live lease shown as %+v", got)
	}
}

func TestForcedReleaseField(t *testing.T) {
	f := start(t, "")
	// A record from a newer lease package that marks a forced release.
	f.put("locks/forced", []byte(`{"holder":"op","nonce":"n1","token":3,"ttl_ms":1000,"released":true,"forced":true,"renewed":"2026-01-01T00:00:00Z","extra":{"x":1}}`))
	if got := findLock(t, f, "locks/", "locks/forced"); got.State != console.StateForced || got.Holder != "op" {
		t.Fatalf("forced release shown as %+v", got)
	}
}

func TestConsulSessionLock(t *testing.T) {
	f := start(t, "")
	c := f.consul()
	id, _, err := c.Session().Create(&consul.SessionEntry{Name: "svc-a", TTL: "30s", Behavior: "delete", LockDelay: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ok, _, err := c.KV().Acquire(&consul.KVPair{Key: "svc/leader", Value: []byte("a"), Session: id}, nil)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	got := findLock(t, f, "svc/", "svc/leader")
	if got.Kind != "consul" || got.State != console.StateHeld || got.Session != id || got.Token != 1 || !strings.HasPrefix(got.Holder, "svc-a") || got.TTL != 30e9 {
		t.Fatalf("session lock shown as %+v", got)
	}
	var ss struct {
		Sessions []struct {
			ID, Name, Behavior string
			TTL                int64 `json:"ttl_ns"`
			ExpiresIn          int64 `json:"expires_in_ns"`
			Held               []string
		}
	}
	f.api("/-/api/sessions", &ss)
	if len(ss.Sessions) != 1 || ss.Sessions[0].ID != id || ss.Sessions[0].Behavior != "delete" || ss.Sessions[0].TTL != 30e9 ||
		fmt.Sprint(ss.Sessions[0].Held) != "[svc/leader]" {
		t.Fatalf("sessions: %+v", ss)
	}
	// A fresh TTL session is invalidated 2×TTL after its last renewal.
	// (more than the TTL itself: the rule is Consul's 2×TTL).
	if e := time.Duration(ss.Sessions[0].ExpiresIn); e <= 30*time.Second || e > time.Minute {
		t.Fatalf("session expires in %v, want between 30s and 2×30s", e)
	}
	if code, _, page := f.getIn("/ui/sessions"); code != 200 || !strings.Contains(string(page), `<td class="num expires">`) ||
		strings.Contains(string(page), `<td class="num expires">—`) {
		t.Fatalf("sessions page shows no time to expiry: %d\n%s", code, page)
	}
	if _, _, err := c.KV().Release(&consul.KVPair{Key: "svc/leader", Session: id}, nil); err != nil {
		t.Fatal(err)
	}
	if got := findLock(t, f, "svc/", "svc/leader"); got.State != console.StateReleased {
		t.Fatalf("released session lock shown as %+v", got)
	}
}

func TestKVValueKinds(t *testing.T) {
	f := start(t, "")
	f.put("cfg/bin", []byte{0, 1, 2, 0xff, 'A'})
	f.put("cfg/json", []byte(`{"a":[1,2]}`))
	f.put("cfg/text", []byte("hello\nworld"))
	big := bytes.Repeat([]byte("x"), 70<<10)
	f.put("cfg/big", big)
	type val struct {
		Kind, Shown, CLI, Curl string
		Truncated              bool
		ModifyIndex            uint64 `json:"modify_index"`
	}
	var v struct{ Value val }
	f.api("/-/api/kv?key=cfg/bin", &v)
	if v.Value.Kind != "hex" || !strings.Contains(v.Value.Shown, "00 01 02 ff 41") {
		t.Fatalf("binary value: %+v", v.Value)
	}
	if !strings.Contains(v.Value.CLI, "get -detailed cfg/bin") || !strings.Contains(v.Value.Curl, "/v1/kv/cfg/bin") {
		t.Fatalf("commands: %q %q", v.Value.CLI, v.Value.Curl)
	}
	f.api("/-/api/kv?key=cfg/json", &v)
	if v.Value.Kind != "json" || v.Value.Shown != "{\n  \"a\": [\n    1,\n    2\n  ]\n}" {
		t.Fatalf("json value: %+v", v.Value)
	}
	f.api("/-/api/kv?key=cfg/text", &v)
	if v.Value.Kind != "text" || v.Value.Shown != "hello\nworld" {
		t.Fatalf("text value: %+v", v.Value)
	}
	f.api("/-/api/kv?key=cfg/big", &v)
	if !v.Value.Truncated || len(v.Value.Shown) != 64<<10 {
		t.Fatalf("big value: truncated %v, %d bytes shown", v.Value.Truncated, len(v.Value.Shown))
	}
	code, hdr, raw := f.getIn("/ui/kv/raw?key=cfg/big")
	if code != 200 || !bytes.Equal(raw, big) || !strings.HasPrefix(hdr.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download: %d, %d bytes, %q", code, len(raw), hdr.Get("Content-Disposition"))
	}
	if code, _, _ := f.getIn("/-/api/kv?key=cfg/none"); code != http.StatusNotFound {
		t.Fatalf("missing key: %d", code)
	}
	if code, _, _ := f.getIn("/-/api/kv?prefix=" + strings.Repeat("a", 3000)); code != http.StatusBadRequest {
		t.Fatalf("overlong prefix: %d", code)
	}
}

func TestKVFolderPaging(t *testing.T) {
	f := start(t, "")
	for i := range 5 {
		f.put(fmt.Sprintf("a/%d", i), []byte("v"))
	}
	for i := range 300 {
		f.put(fmt.Sprintf("b/deep/%03d", i), []byte("v"))
	}
	f.put("c", []byte("v"))
	f.put("d/e", []byte("v"))
	type folder struct {
		Folder struct {
			Entries []struct {
				Key    string
				Folder bool
			}
			Next string
		}
	}
	var root folder
	f.api("/-/api/kv", &root)
	var keys []string
	for _, e := range root.Folder.Entries {
		keys = append(keys, e.Key)
	}
	if fmt.Sprint(keys) != "[a/ b/ c d/]" || root.Folder.Next != "" {
		t.Fatalf("root lists %v (next %q), want [a/ b/ c d/]", keys, root.Folder.Next)
	}
	// 300 keys in one folder: pages of 100, each continuing where the
	// last stopped.
	var seen []string
	next := ""
	for range 10 {
		var p folder
		f.api("/-/api/kv?prefix=b/deep/&from="+url.QueryEscape(next), &p)
		for _, e := range p.Folder.Entries {
			seen = append(seen, e.Key)
		}
		if len(p.Folder.Entries) > console.DefaultPageSize {
			t.Fatalf("a page of %d entries", len(p.Folder.Entries))
		}
		if next = p.Folder.Next; next == "" {
			break
		}
	}
	if len(seen) != 300 || seen[0] != "b/deep/000" || seen[299] != "b/deep/299" {
		t.Fatalf("paging saw %d keys (%v … )", len(seen), seen[:min(3, len(seen))])
	}
}

func TestPublications(t *testing.T) {
	f := start(t, "")
	first := f.publishGen("site", map[string]string{"index.html": "v1"})
	second := f.publishGen("site", map[string]string{"index.html": "<h1>v2</h1>", "app.js": "x()"})
	var list struct {
		Publications []struct{ Prefix, Generation string }
	}
	f.api("/-/api/publications", &list)
	if len(list.Publications) != 1 || list.Publications[0].Prefix != "site" || list.Publications[0].Generation != second {
		t.Fatalf("publications: %+v", list)
	}
	var p struct {
		Files []struct {
			Name, SHA256 string
			Size         int64
		}
		Generations []struct{ ID, State string }
	}
	f.api("/-/api/publication?prefix=site", &p)
	sum := sha256.Sum256([]byte("<h1>v2</h1>"))
	files := map[string]string{}
	for _, fl := range p.Files {
		files[fl.Name] = fl.SHA256
	}
	if len(files) != 2 || files["index.html"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("files: %+v", p.Files)
	}
	states := map[string]string{}
	for _, g := range p.Generations {
		states[g.ID] = g.State
	}
	if states[second] != "current" || states[first] != "superseded" {
		t.Fatalf("generations: %+v (first %s, second %s)", p.Generations, first, second)
	}
	// A writer that died before its manifest leaves an unfinished
	// generation: the console says what GC (and publish list) say, and
	// gives the same end of grace.
	ctx := context.Background()
	dead, err := publish.Begin(ctx, f.store, "site", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := dead.Put(ctx, "x", strings.NewReader("half")); err != nil {
		t.Fatal(err)
	}
	var q struct {
		Generations []struct {
			ID, State string
			GCAfter   time.Time `json:"gc_after"`
		}
	}
	f.api("/-/api/publication?prefix=site", &q)
	gc, err := publish.GC(ctx, f.store, "site", &publish.GCOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]publish.Generation{}
	for _, g := range gc.Generations {
		want[g.ID] = g
	}
	for _, g := range q.Generations {
		if g.ID == second {
			continue
		}
		if w := want[g.ID]; g.State != string(w.State) || !g.GCAfter.Equal(w.GraceEnds) {
			t.Errorf("console shows %s as %s until %v; GC says %s until %v", g.ID, g.State, g.GCAfter, w.State, w.GraceEnds)
		}
	}
	if len(q.Generations) != 3 || want[dead.ID()].State != publish.Unfinished {
		t.Fatalf("generations: console %+v, GC %+v", q.Generations, gc.Generations)
	}
}

func TestS3(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	mc := f.s3()
	f.bucket("photos", true)
	f.putObject("photos", "cat.jpg", "one", "")
	f.putObject("photos", "cat.jpg", "two", "")
	if err := mc.RemoveObject(ctx, "photos", "cat.jpg", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	core := minio.Core{Client: mc}
	upID, err := core.NewMultipartUpload(ctx, "photos", "big.bin", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buckets struct {
		Buckets []struct{ Name, Versioning string }
	}
	f.api("/-/api/s3", &buckets)
	if len(buckets.Buckets) != 1 || buckets.Buckets[0].Versioning != "Enabled" {
		t.Fatalf("buckets: %+v", buckets)
	}
	var b struct {
		Versions []struct {
			Key          string
			Latest       bool
			DeleteMarker bool `json:"delete_marker"`
			Size         int64
		}
		Uploads []struct {
			Key      string
			UploadID string `json:"upload_id"`
		}
	}
	f.api("/-/api/s3?bucket=photos", &b)
	if len(b.Versions) != 3 || !b.Versions[0].DeleteMarker || !b.Versions[0].Latest || b.Versions[1].Size != 3 || b.Versions[1].Latest {
		t.Fatalf("versions: %+v", b.Versions)
	}
	if len(b.Uploads) != 1 || b.Uploads[0].UploadID != upID || b.Uploads[0].Key != "big.bin" {
		t.Fatalf("uploads: %+v, want %s", b.Uploads, upID)
	}
	if code, _, _ := f.getIn("/-/api/s3?bucket=nope"); code != http.StatusNotFound {
		t.Fatalf("missing bucket: %d", code)
	}
}

func TestACLToken(t *testing.T) {
	const tok = "s3cr3t-token"
	f := start(t, tok)
	f.put("k", []byte("v"))
	for _, p := range []string{"/-/api/overview", "/-/api/kv?key=k", "/-/api/kv/raw?key=k", "/-/api/locks"} {
		if code, _, b := f.get(p); code != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d %s", p, code, b)
		}
		if code, _, _ := f.get(p, "X-Consul-Token", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d", p, code)
		}
		if code, _, _ := f.get(p, "Authorization", "Bearer "+tok); code != http.StatusOK {
			t.Errorf("GET %s with the token: %d", p, code)
		}
	}
	for _, p := range []string{"/ui/", "/ui/kv?key=k", "/ui/kv/raw?key=k"} {
		code, hdr, _ := f.get(p)
		if code != http.StatusSeeOther || !strings.HasPrefix(hdr.Get("Location"), "/ui/login") {
			t.Errorf("GET %s without login: %d to %q", p, code, hdr.Get("Location"))
		}
	}
	post := func(token string, hdr ...string) *http.Response {
		req, _ := http.NewRequest("POST", f.srv.URL+"/ui/login?next=/ui/kv", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post("wrong"); r.StatusCode != http.StatusForbidden || len(r.Cookies()) != 0 {
		t.Fatalf("login with a wrong token: %d, cookies %v", r.StatusCode, r.Cookies())
	}
	if r := post(tok, "Origin", "http://evil.example"); r.StatusCode != http.StatusForbidden || len(r.Cookies()) != 0 {
		t.Fatalf("cross-origin login: %d, cookies %v", r.StatusCode, r.Cookies())
	}
	r := post(tok, "Origin", f.srv.URL)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/ui/kv" || len(r.Cookies()) != 1 {
		t.Fatalf("login: %d to %q, cookies %v", r.StatusCode, r.Header.Get("Location"), r.Cookies())
	}
	c := r.Cookies()[0]
	if c.Name != console.CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict", c)
	}
	if code, _, b := f.get("/ui/kv?key=k", "Cookie", c.Name+"="+c.Value); code != http.StatusOK || !bytes.Contains(b, []byte("CreateIndex")) {
		t.Fatalf("with the cookie: %d", code)
	}
	if code, _, _ := f.get("/-/api/overview", "Cookie", c.Name+"=nope"); code != http.StatusUnauthorized {
		t.Fatalf("a forged cookie: %d", code)
	}
	// The Consul API still wants its own token; the console changed nothing there.
	if code, _, _ := f.get("/v1/kv/k"); code != http.StatusForbidden {
		t.Fatalf("/v1/kv without token: %d", code)
	}
}

var (
	inlineScript = regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]+</script>|<script>`)
	inlineAttr   = regexp.MustCompile(`\s(?:on[a-z]+|style)=`)
	external     = regexp.MustCompile(`(?:src|href)="(?:https?:)?//`)
)

// Every page: a strict CSP, no inline script, style or event handler, no
// external asset, and readable without JavaScript (the data is in the
// HTML).
func TestPagesStrictAndStatic(t *testing.T) {
	f := start(t, "")
	f.acquire("locks/a", "h1")
	f.publishGen("pub", map[string]string{"f": "x"})
	f.put("k", []byte("v"))
	f.bucket("bkt", false)
	pages := map[string]string{
		"/ui/":                        "Global index",
		"/ui/locks":                   "locks/a",
		"/ui/sessions":                "No Consul sessions",
		"/ui/kv":                      "locks/",
		"/ui/kv?key=k":                "ModifyIndex",
		"/ui/publications":            "pub",
		"/ui/publication?prefix=pub":  "current",
		"/ui/s3":                      "bkt",
		"/ui/s3?bucket=bkt":           "Multipart uploads",
		"/ui/nosuch":                  "no such page",
		"/ui/publication?prefix=none": "no publication pointer",
	}
	for p, want := range pages {
		_, hdr, b := f.getIn(p)
		if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		if m := inlineScript.Find(b); m != nil {
			t.Errorf("%s: inline script %q", p, m)
		}
		if m := inlineAttr.Find(b); m != nil {
			t.Errorf("%s: inline attribute %q", p, m)
		}
		if m := external.Find(b); m != nil {
			t.Errorf("%s: external asset %q", p, m)
		}
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s: no %q in\n%s", p, want, b)
		}
	}
	for _, a := range []string{"/ui/static/app.js", "/ui/static/app.css", "/ui/static/uPlot.iife.min.js", "/ui/static/uPlot.min.css"} {
		if code, _, b := f.get(a); code != 200 || len(b) == 0 {
			t.Errorf("%s: %d", a, code)
		}
	}
	if code, _, _ := f.get("/ui/static/../../go.mod"); code == 200 {
		t.Errorf("static escaped its directory")
	}
}

func TestOverviewMetrics(t *testing.T) {
	f := start(t, "")
	for i := range 3 {
		f.put(fmt.Sprintf("k%d", i), []byte("v"))
	}
	var o struct {
		Index   uint64
		Keys    struct{ N int }
		DataDir string `json:"data_dir"`
		Metrics struct {
			Commits, Updates uint64
			Requests         map[string]uint64
			Fsync            struct{ Count uint64 }
		}
	}
	f.api("/-/api/overview", &o)
	if o.Keys.N != 3 || o.Index < 3 || o.DataDir != f.srv.DataDir {
		t.Fatalf("overview: %+v", o)
	}
	if o.Metrics.Commits < 3 || o.Metrics.Updates < 3 || o.Metrics.Requests["consul"] < 3 || o.Metrics.Fsync.Count < 3 {
		t.Fatalf("metrics: %+v", o.Metrics)
	}
}

func TestLocksPagingAndSort(t *testing.T) {
	f := start(t, "")
	for i := range 150 {
		f.put(fmt.Sprintf("locks/plain%03d", i), []byte("not a lock"))
	}
	f.staleLease("locks/zz-old", "old@h")
	f.acquire("locks/zz-new", "new@h")
	var p1, p2 locksJSON
	f.api("/-/api/locks?prefix=locks/", &p1)
	if len(p1.Locks) != 0 || p1.Next != "locks/plain100" {
		t.Fatalf("first page: %d locks, next %q; want none among 100 plain keys, next locks/plain100", len(p1.Locks), p1.Next)
	}
	f.api("/-/api/locks?sort=age&prefix=locks/&from="+url.QueryEscape(p1.Next), &p2)
	if len(p2.Locks) != 2 || p2.Locks[0].Key != "locks/zz-old" || p2.Locks[1].Key != "locks/zz-new" || p2.Next != "" {
		t.Fatalf("second page sorted by age: %+v", p2)
	}
}

func TestMethods(t *testing.T) {
	f := start(t, "")
	for _, p := range []string{"/-/api/overview", "/ui/", "/ui/kv/raw?key=x", "/ui/static/app.js"} {
		req, _ := http.NewRequest("DELETE", f.srv.URL+p, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("DELETE %s: %d", p, resp.StatusCode)
		}
	}
	resp, err := http.Head(f.srv.URL + "/ui/locks")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("HEAD /ui/locks: %d", resp.StatusCode)
	}
}

// Leases kept by an s3:// store in one of this server's buckets.
func TestS3StoreLeases(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	f.bucket("locks-bkt", false)
	s, err := s3store.Open(ctx, "locks-bkt", "", &s3store.Options{Endpoint: f.srv.URL, Region: "us-east-1",
		Credentials: awscreds.NewStaticCredentialsProvider(f.srv.AccessKey, f.srv.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lk, err := lease.NewLocker(s, "jobs/deploy", &lease.Options{Holder: "ci@runner", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lk.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "jobs/other", []byte("not a lease"), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	var got locksJSON
	f.api("/-/api/locks?bucket=locks-bkt&prefix=jobs/", &got)
	if len(got.Locks) != 1 || got.Locks[0].Key != "jobs/deploy" || got.Locks[0].Holder != "ci@runner" ||
		got.Locks[0].Token != l.Token() || got.Locks[0].State != console.StateHeld {
		t.Fatalf("S3 leases: %+v", got)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	f.api("/-/api/locks?bucket=locks-bkt&prefix=jobs/", &got)
	if len(got.Locks) != 1 || got.Locks[0].State != console.StateReleased {
		t.Fatalf("S3 lease after release: %+v", got)
	}
	if code, _, _ := f.getIn("/-/api/locks?bucket=nope"); code != http.StatusNotFound {
		t.Fatalf("missing bucket: %d", code)
	}
}

// A token with characters a cookie cannot carry as they are still logs in.
func TestLoginTokenAnyBytes(t *testing.T) {
	const tok = `a b;c="d",é`
	f := start(t, tok)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(f.srv.URL+"/ui/login?next=/ui/kv", url.Values{"token": {tok}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/kv" || !bytes.Contains(b, []byte("(root)")) {
		t.Fatalf("after login: %d at %s\n%s", resp.StatusCode, resp.Request.URL, b)
	}
}
