package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	consul "github.com/hashicorp/consul/api"
	"github.com/minio/minio-go/v7"

	"github.com/latchkey/latchkey/internal/testutil"
)

// tab is a headless chromium tab for one test, with screenshots saved
// under t.TempDir() (and under $LATCHKEY_CONSOLE_SCREENSHOTS when set:
// how docs/console/ is made).
type tab struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func browser(t *testing.T) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testutil.Chromium(t)),
		chromedp.WindowSize(1200, 900),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // chromium refuses to run its sandbox as root
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil { // start the browser (no timeout on this first run)
		t.Fatalf("chromium: %v", err)
	}
	return &tab{t: t, ctx: ctx, dir: t.TempDir()}
}

// step bounds one action, so a missing element fails the test quickly.
func (b *tab) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, 15*time.Second)
}

func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		loc, _ := chromedp.Run(b.ctx, chromedp.Location())
		html, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		b.t.Fatalf("%s: %v (at %s showing %q)", what, err, loc, html)
	}
}

func run[T any](b *tab, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

func (b *tab) text(sel string) string {
	b.t.Helper()
	return run(b, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

func (b *tab) fetchStatus(path string) int {
	b.t.Helper()
	return run(b, "fetch "+path, chromedp.Evaluate[int](`fetch(`+strconv.Quote(path)+`).then(r => r.status)`, chromedp.EvalAwaitPromise))
}

func (b *tab) shot(name string) {
	b.t.Helper()
	png := run(b, "screenshot", chromedp.CaptureScreenshot())
	p := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
	if d := os.Getenv("LATCHKEY_CONSOLE_SCREENSHOTS"); d != "" {
		if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// loginS3 logs the tab in with the server's S3 credentials.
func (b *tab) loginS3(f *fixture) {
	b.t.Helper()
	b.do("login", chromedp.Navigate(f.srv.URL+"/ui/login"), chromedp.WaitVisible(css("#access_key")),
		chromedp.SendKeys(css("#access_key"), f.srv.AccessKey), chromedp.SendKeys(css("#secret_key"), f.srv.SecretKey),
		chromedp.Submit(css("#secret_key")), chromedp.WaitVisible(css("#overview")))
}

// TestBrowser drives every view in headless chromium against a real
// server whose data was written through the real APIs.
func TestBrowser(t *testing.T) {
	b := browser(t)
	f := start(t, "")

	held := f.acquire("locks/nightly-backup", "backup@db-1")
	f.acquire("locks/reindex", "indexer@db-2")
	f.staleLease("locks/crashed-job", "cron@db-3")
	f.publishGen("site", map[string]string{"index.html": "<h1>v1</h1>"})
	f.publishGen("site", map[string]string{"index.html": "<h1>v2</h1>", "app.js": "main()", "img/logo.png": "\x89PNG"})
	f.put("blobs/key.bin", []byte{0x00, 0x01, 0x02, 0xfe, 0xff, 'l', 'k'})
	f.put("config/app.json", []byte(`{"replicas":3,"regions":["eu","us"]}`))
	for i := range 5 {
		f.put(fmt.Sprintf("config/feature/%d", i), []byte("on"))
	}
	c := f.consul()
	sid, _, err := c.Session().Create(&consul.SessionEntry{Name: "api-leader", TTL: "30s", Behavior: "release"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.KV().Acquire(&consul.KVPair{Key: "service/api/leader", Value: []byte("node-a"), Session: sid}, nil); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	mc := f.s3()
	bctx := context.Background()
	f.bucket("artifacts", true)
	f.putObject("artifacts", "app.tar", "build 1", "")
	f.putObject("artifacts", "app.tar", "build 2", "")
	f.putObject("artifacts", "old.tar", "x", "")
	if err := mc.RemoveObject(bctx, "artifacts", "old.tar", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := (minio.Core{Client: mc}).NewMultipartUpload(bctx, "artifacts", "upload.iso", minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	// Some traffic for the charts while the overview samples.
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				c.KV().Put(&consul.KVPair{Key: "load/counter", Value: []byte(fmt.Sprint(i))}, nil)
			}
		}
	}()

	u := f.srv.URL
	b.loginS3(f)
	b.do("overview", chromedp.Navigate(u+"/ui/"), chromedp.WaitVisible(css(`#charts[data-samples="3"]`)))
	text := b.text("#overview")
	b.shot("overview")
	close(stop)
	if !strings.Contains(text, f.srv.DataDir) || !strings.Contains(text, "Global index") {
		t.Errorf("overview shows %q", text)
	}

	b.do("locks", chromedp.Navigate(u+"/ui/locks?prefix="), chromedp.WaitVisible(css(`#locks`)))
	b.shot("locks")
	row := func(key string) string { return b.text(`tr[data-key="` + key + `"]`) }
	if r := row("locks/nightly-backup"); !strings.Contains(r, "held") || !strings.Contains(r, "backup@db-1") ||
		!strings.Contains(r, fmt.Sprint(held.Token())) {
		t.Errorf("held lease row: %q (token %d)", r, held.Token())
	}
	if r := row("locks/crashed-job"); !strings.Contains(r, "looks stale") {
		t.Errorf("stale lease row: %q", r)
	}
	if r := row("service/api/leader"); !strings.Contains(r, "held") || !strings.Contains(r, "api-leader") {
		t.Errorf("session lock row: %q", r)
	}
	// Released while the page is open: its refresh shows it.
	if err := held.Release(bctx); err != nil {
		t.Fatal(err)
	}
	b.do("released", chromedp.WaitVisible(css(`tr[data-key="locks/nightly-backup"] .st-released`)))

	b.do("sessions", chromedp.Navigate(u+"/ui/sessions"), chromedp.WaitVisible(css("#sessions")))
	b.shot("sessions")
	if text := b.text("#sessions"); !strings.Contains(text, sid) || !strings.Contains(text, "service/api/leader") {
		t.Errorf("sessions: %q", text)
	}

	b.do("kv tree", chromedp.Navigate(u+"/ui/kv?prefix=config/"), chromedp.WaitVisible(css("#kv")))
	b.shot("kv")
	if text := b.text("#kv"); !strings.Contains(text, "feature/") || !strings.Contains(text, "app.json") {
		t.Errorf("kv tree: %q", text)
	}
	b.do("kv binary", chromedp.Navigate(u+"/ui/kv?key=blobs/key.bin"), chromedp.Click(css("details summary")))
	b.shot("kv-value")
	if kind, text := b.text("#kind"), b.text("#value"); kind != "hex" || !strings.Contains(text, "00 01 02 fe ff 6c 6b") {
		t.Errorf("binary value shown as %s: %q", kind, text)
	}

	b.do("publications", chromedp.Navigate(u+"/ui/publications"), chromedp.Click(css("#publications a")), chromedp.WaitVisible(css("#files")))
	b.shot("publication")
	if text := b.text("#files"); !strings.Contains(text, "index.html") || !strings.Contains(text, "img/logo.png") {
		t.Errorf("publication files: %q", text)
	}
	if text := b.text("#generations"); !strings.Contains(text, "current") || !strings.Contains(text, "superseded") {
		t.Errorf("generations: %q", text)
	}

	b.do("s3", chromedp.Navigate(u+"/ui/s3"), chromedp.Click(css("#buckets a")), chromedp.WaitVisible(css("#versions")))
	b.shot("s3")
	if text := b.text("main"); !strings.Contains(text, "delete marker") || !strings.Contains(text, "upload.iso") || !strings.Contains(text, "Enabled") {
		t.Errorf("s3 bucket page: %q", text)
	}
}

// TestBrowserACL: with an ACL token the console shows nothing before
// login, and its JSON refuses the browser too.
func TestBrowserACL(t *testing.T) {
	b := browser(t)
	const tok = "browser-acl-token"
	f := start(t, tok)
	u := f.srv.URL
	b.do("open", chromedp.Navigate(u+"/ui/locks"), chromedp.WaitVisible(css("#token")))
	b.shot("login")
	loc, text, status := run(b, "location", chromedp.Location()), b.text("main"), b.fetchStatus("/-/api/overview")
	if !strings.Contains(loc, "/ui/login") || strings.Contains(text, "Key prefix") || status != 401 {
		t.Fatalf("before login: at %s, API status %d, page %q", loc, status, text)
	}
	b.do("wrong token", chromedp.SendKeys(css("#token"), "wrong"), chromedp.Submit(css("#token")), chromedp.WaitVisible(css(".error")))
	b.do("login", chromedp.SendKeys(css("#token"), tok), chromedp.Submit(css("#token")), chromedp.WaitVisible(css("form.filter")))
	loc, status = run(b, "location", chromedp.Location()), b.fetchStatus("/-/api/overview")
	cookie := run(b, "cookie", chromedp.Evaluate[string](`document.cookie`))
	if !strings.HasSuffix(loc, "/ui/locks") || status != 200 || cookie != "" {
		t.Fatalf("after login: at %s, API status %d, document.cookie %q (want it HttpOnly, unseen)", loc, status, cookie)
	}
}

// An object a client stored never runs with the console's authority: an
// HTML page in a bucket, opened (through a presigned URL, as a link in a
// chat would be) in a browser logged in to the console, tries to read
// /-/api/ with the operator's session and write what it got into its
// title. Its script must not run, or get nothing.
func TestBrowserStoredPageGetsNothing(t *testing.T) {
	b := browser(t)
	f := start(t, "")
	f.bucket("uploads", false)
	const page = `<!doctype html><html><head><title>inert</title></head><body><p id="out">inert</p><script>
document.title = "ran";
fetch("/-/api/s3?bucket=uploads", {credentials: "include"})
  .then(function (r) { return r.text().then(function (t) { return r.status + " " + t; }); })
  .then(function (t) { document.title = "leaked " + t.slice(0, 200); document.getElementById("out").textContent = document.title; },
        function (e) { document.title = "fetch failed " + e; document.getElementById("out").textContent = document.title; });
</script></body></html>`
	for _, o := range []struct{ key, ctype string }{{"evil.html", "text/html"}, {"evil.svg", "image/svg+xml"}} {
		body := page
		if o.ctype == "image/svg+xml" {
			body = `<svg xmlns="http://www.w3.org/2000/svg"><title>inert</title><script>` +
				`fetch("/-/api/s3?bucket=uploads",{credentials:"include"}).then(function(r){return r.text()}).then(function(t){document.title="leaked "+t.slice(0,200)},function(e){document.title="fetch failed "+e});document.title="ran";` +
				`</script></svg>`
		}
		f.putObject("uploads", o.key, body, o.ctype)
	}
	b.loginS3(f)
	if status := b.fetchStatus("/-/api/s3?bucket=uploads"); status != 200 {
		t.Fatalf("the operator's own session reads /-/api/: %d", status)
	}
	for _, key := range []string{"evil.html", "evil.svg"} {
		u, err := f.s3().PresignedGetObject(context.Background(), "uploads", key, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Navigate returns after the load event, so a script that runs
		// has set the title to "ran" at least; a later "leaked" would
		// need it to have run.
		b.do("open "+key, chromedp.Navigate(u.String()))
		title := run(b, "title", chromedp.Title())
		text := run(b, "text", chromedp.Evaluate[string](`document.documentElement.textContent`))
		if title != "inert" || strings.Contains(text, "evil.") {
			t.Errorf("%s: title %q, text %q: its script ran with the console's origin", key, title, text)
		}
	}
}
