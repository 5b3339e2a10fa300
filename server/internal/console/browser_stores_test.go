package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/chromedp/chromedp"
	"github.com/minio/minio-go/v7/pkg/sse"

	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/publish/publishtest"
	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/consulstore"
	"github.com/latchkey/latchkey/store/s3store"
)

// s3Store opens an s3:// store on the fixture's server, in bucket (made
// here, with SSE-S3 default encryption when sealed) under prefix.
func (f *fixture) s3Store(bucket, prefix string, sealed bool) store.Store {
	f.t.Helper()
	ctx := context.Background()
	f.bucket(bucket, false)
	if sealed {
		if err := f.s3().SetBucketEncryption(ctx, bucket, sse.NewConfigurationSSES3()); err != nil {
			f.t.Fatal(err)
		}
	}
	s, err := s3store.Open(ctx, bucket, prefix, &s3store.Options{Endpoint: f.srv.URL, Region: "us-east-1",
		Credentials: awscreds.NewStaticCredentialsProvider(f.srv.AccessKey, f.srv.SecretKey, "")})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { s.Close() })
	return s
}

// TestBrowserStores drives the views of issue 27's console items in one
// headless chromium against one server (a browser and a server per item
// cost seconds each): each subtest gets the fixture and the tab as its
// own. The empty chart runs first, while the server is idle.
func TestBrowserStores(t *testing.T) {
	f := start(t, "")
	b := browser(t)
	b.loginS3(f)
	for _, c := range []struct {
		name string
		run  func(*testing.T, *fixture, *tab)
	}{
		{"EmptyChart", emptyChart},
		{"PublicationUnderStorePrefix", publicationUnderStorePrefix},
		{"PublicationInBucket", publicationInBucket},
		{"SealedLeaseInBucket", sealedLeaseInBucket},
		{"LockQueueLength", lockQueueLength},
	} {
		t.Run(c.name, func(t *testing.T) {
			ft, bt := *f, *b
			ft.t, bt.t = t, t
			c.run(t, &ft, &bt)
		})
	}
}

// A publication written through a consul:// store with a key prefix
// (consul://HOST/team) lists its files: the pointer names its manifest
// by the store's own key, without the prefix.
func publicationUnderStorePrefix(t *testing.T, f *fixture, b *tab) {
	s, err := consulstore.Open(context.Background(), &consulstore.Options{Address: f.srv.Addr, Prefix: "team"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	publishtest.Publish(t, t.Context(), s, "site", map[string]string{"index.html": "<h1>hi</h1>", "img/logo.png": "\x89PNG"})

	u := f.srv.URL
	b.do("publications", chromedp.Navigate(u+"/ui/publications"), chromedp.Click(css("#publications a")), chromedp.WaitVisible(css("#generations")))
	b.shot("publication-store-prefix")
	if text := b.text("main"); !strings.Contains(text, "team/site") || !strings.Contains(text, "index.html") || !strings.Contains(text, "img/logo.png") {
		t.Errorf("publication under a store prefix: %q", text)
	}
	// Each file links to its own key in the KV browser.
	href := run(b, "file link", chromedp.Evaluate[string](`document.querySelector("#files a").getAttribute("href")`))
	if !strings.Contains(href, "team%2Fsite%2Fgen%2F") && !strings.Contains(href, "team/site/gen/") {
		t.Errorf("file link %q does not name the key under the store's prefix", href)
	}
}

// A publication kept in a bucket (an s3:// store on this server, here
// with a key prefix and SSE-S3 default encryption, so every record is
// sealed at rest) shows with its files, read as GET serves them.
func publicationInBucket(t *testing.T, f *fixture, b *tab) {
	s := f.s3Store("pub-bucket", "team", true)
	publishtest.Publish(t, t.Context(), s, "site", map[string]string{"index.html": "<h1>v1</h1>"})
	publishtest.Publish(t, t.Context(), s, "site", map[string]string{"index.html": "<h1>v2</h1>", "app.js": "main()"})

	u := f.srv.URL
	b.do("publications in a bucket", chromedp.Navigate(u+"/ui/publications?bucket=pub-bucket"), chromedp.WaitVisible(css("main")))
	if text := b.text("main"); !strings.Contains(text, "team/site") {
		t.Fatalf("publications in bucket pub-bucket: %q", text)
	}
	b.do("publication in a bucket", chromedp.Click(css("#publications a")), chromedp.WaitVisible(css("#generations")))
	b.shot("publication-bucket")
	if text := b.text("#files"); !strings.Contains(text, "index.html") || !strings.Contains(text, "app.js") {
		t.Errorf("files of a publication in a bucket: %q", text)
	}
	if text := b.text("#generations"); !strings.Contains(text, "current") || !strings.Contains(text, "superseded") {
		t.Errorf("generations of a publication in a bucket: %q", text)
	}
}

// Lease records in a bucket with SSE-S3 default encryption are sealed at
// rest; the Locks page reads them as GET serves them and shows them.
func sealedLeaseInBucket(t *testing.T, f *fixture, b *tab) {
	s := f.s3Store("sealed-locks", "", true)
	lk, err := lease.NewLocker(s, "jobs/deploy", &lease.Options{Holder: "ci@runner", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lk.TryAcquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.do("locks in a sealed bucket", chromedp.Navigate(f.srv.URL+"/ui/locks?bucket=sealed-locks&prefix=jobs/"), chromedp.WaitVisible(css("main")))
	b.shot("locks-sealed-bucket")
	if text := b.text("main"); !strings.Contains(text, "jobs/deploy") || !strings.Contains(text, "ci@runner") || !strings.Contains(text, fmt.Sprint(l.Token())) {
		t.Errorf("a sealed lease record: %q", text)
	}
}

// The Locks page shows how many wait in each lease's queue (package
// lease's waiting line, QueueKey), here under a store prefix too.
func lockQueueLength(t *testing.T, f *fixture, b *tab) {
	s, err := consulstore.Open(context.Background(), &consulstore.Options{Address: f.srv.Addr, Prefix: "team"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	newLocker := func(holder string) *lease.Locker {
		lk, err := lease.NewLocker(s, "locks/busy", &lease.Options{Holder: holder, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return lk
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := newLocker("owner@a").TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	done := make(chan error, 2)
	for _, h := range []string{"waiter@b", "waiter@c"} {
		go func() { _, err := newLocker(h).Acquire(ctx); done <- err }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		q, err := lease.InspectQueue(ctx, s, "locks/busy")
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Tickets) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiters never queued: %+v", q)
		}
		time.Sleep(20 * time.Millisecond)
	}

	b.do("locks", chromedp.Navigate(f.srv.URL+"/ui/locks?prefix=team/locks/"), chromedp.WaitVisible(css("#locks")))
	b.shot("locks-queue")
	if q := b.text(`tr[data-key="team/locks/busy"] .queue`); q != "2" {
		t.Errorf("queue of team/locks/busy shows %q, want 2 (row %q)", q, b.text(`tr[data-key="team/locks/busy"]`))
	}
	cancel()
	for range 2 {
		<-done
	}
}

// A chart with nothing to plot says so, and its y axis does not read
// "0 0 0" (the range of an all-zero series was [0, 1e-9]).
func emptyChart(t *testing.T, f *fixture, b *tab) {
	b.do("overview", chromedp.Navigate(f.srv.URL+"/ui/"), chromedp.WaitVisible(css(`#charts[data-samples="3"]`)))
	b.shot("overview-idle")
	// The fsync chart of an idle server has no commits: no data at all.
	fsync := b.text(`[data-chart="fsync"]`)
	if !strings.Contains(fsync, "no data") {
		t.Errorf("idle fsync chart: %q, want it to say no data", fsync)
	}
	// uPlot draws axis labels on the canvas; read the tick labels it
	// computed for every chart's y axis.
	labels := run(b, "y ticks", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".chart")).map(c => c.getAttribute("data-yticks") || "")`))
	for i, l := range labels {
		ticks := strings.Fields(l)
		seen := map[string]bool{}
		for _, tk := range ticks {
			if seen[tk] {
				t.Errorf("chart %d: y axis labels %q repeat %q", i, l, tk)
				break
			}
			seen[tk] = true
		}
		if len(ticks) == 0 {
			t.Errorf("chart %d: no y axis labels recorded", i)
		}
	}
}

// Publications page by page, in the KV key space and in a bucket: the key
// a page stops at (next) is the first the following page reads, so a
// pointer there shows on the second page.
func TestPublicationsPaging(t *testing.T) {
	f := start(t, "")
	const ptr = `{"generation":"20260101T000000.000Z-0123456789abcdef","manifest":"q/gen/20260101T000000.000Z-0123456789abcdef/manifest","committed":"2026-01-01T00:00:00Z"}`
	kv := f.store
	s3 := f.s3Store("paged", "", false)
	for _, c := range []struct {
		name  string
		s     store.Store
		query string
	}{{"kv", kv, "prefix=a/"}, {"bucket", s3, "bucket=paged&prefix=a/"}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			for i := range 100 {
				if _, err := c.s.Put(ctx, fmt.Sprintf("a/k%03d", i), []byte("filler"), store.Condition{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.s.Put(ctx, "a/q/pointer", []byte(ptr), store.Condition{}); err != nil {
				t.Fatal(err)
			}
			var page struct {
				Publications []struct{ Prefix string }
				Scanned      int
				Next         string
			}
			f.api("/-/api/publications?"+c.query, &page)
			if len(page.Publications) != 0 || page.Scanned != 100 || page.Next != "a/q/pointer" {
				t.Fatalf("page 1: %+v", page)
			}
			page.Next = ""
			f.api("/-/api/publications?"+c.query+"&from=a/q/pointer", &page)
			if len(page.Publications) != 1 || page.Publications[0].Prefix != "a/q" || page.Scanned != 1 || page.Next != "" {
				t.Fatalf("page 2: %+v", page)
			}
		})
	}
}
