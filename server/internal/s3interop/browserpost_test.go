package s3interop

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"

	"github.com/latchkey/latchkey/internal/testutil"
)

// postPolicyFields signs a PostObject policy the way a web application's
// backend does (AWS's documented algorithm: the signature is HMAC-SHA256
// of the base64 policy under the SigV4 signing key) and returns the form's
// hidden fields in order.
func postPolicyFields(ak, sk string, exp time.Time, conds ...string) [][2]string {
	now := time.Now().UTC()
	day, date := now.Format("20060102"), now.Format("20060102T150405Z")
	cred := ak + "/" + day + "/us-east-1/s3/aws4_request"
	conds = append(conds, `{"x-amz-algorithm": "AWS4-HMAC-SHA256"}`, fmt.Sprintf(`{"x-amz-credential": %q}`, cred), fmt.Sprintf(`{"x-amz-date": %q}`, date))
	doc := fmt.Sprintf(`{"expiration": %q, "conditions": [%s]}`, exp.UTC().Format("2006-01-02T15:04:05.000Z"), strings.Join(conds, ", "))
	policy := base64.StdEncoding.EncodeToString([]byte(doc))
	key := []byte("AWS4" + sk)
	for _, part := range []string{day, "us-east-1", "s3", "aws4_request", policy} {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(part))
		key = m.Sum(nil)
	}
	return [][2]string{{"x-amz-algorithm", "AWS4-HMAC-SHA256"}, {"x-amz-credential", cred}, {"x-amz-date", date},
		{"policy", policy}, {"x-amz-signature", hex.EncodeToString(key)}}
}

var uploadPage = template.Must(template.New("").Parse(`<!doctype html><title>upload</title>
<form id="up" action="{{.Action}}" method="post" enctype="multipart/form-data">
{{range .Fields}}<input type="hidden" name="{{index . 0}}" value="{{index . 1}}">
{{end}}<input type="file" name="file"><input type="submit" value="Upload"></form>`))

// TestChromiumPostObject is issue 24 item 4 from a real browser: headless
// Chromium fills an HTML form served by another origin (a web
// application), picks a file and submits it to the bucket; the server
// checks the signed policy (bucket, key prefix with ${filename},
// Content-Type, the redirect), stores the file and answers 303 to
// success_action_redirect with bucket, key and ETag, which the browser
// follows.
func TestChromiumPostObject(t *testing.T) {
	path := testutil.Chromium(t)
	srv, c, bucket := start(t)
	done := make(chan url.Values, 1)
	app := httptest.NewServer(http.NewServeMux())
	t.Cleanup(app.Close)
	redirect := app.URL + "/done"
	fields := append([][2]string{{"key", "uploads/${filename}"}, {"Content-Type", "text/plain"}, {"success_action_redirect", redirect}},
		postPolicyFields(srv.AccessKey, srv.SecretKey, time.Now().Add(10*time.Minute),
			fmt.Sprintf(`{"bucket": %q}`, bucket), `["starts-with", "$key", "uploads/"]`, `{"Content-Type": "text/plain"}`,
			fmt.Sprintf(`["eq", "$success_action_redirect", %q]`, redirect), `["content-length-range", 1, 1048576]`)...)
	mux := app.Config.Handler.(*http.ServeMux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_ = uploadPage.Execute(w, map[string]any{"Action": srv.URL + "/" + bucket, "Fields": fields})
	})
	mux.HandleFunc("/done", func(w http.ResponseWriter, r *http.Request) {
		select {
		case done <- r.URL.Query():
		default:
		}
		fmt.Fprint(w, `<!doctype html><p id="done">uploaded</p>`)
	})
	file := filepath.Join(t.TempDir(), "hello.txt")
	if err := os.WriteFile(file, []byte("hello from a browser form\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	step, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(step, chromedp.Navigate(app.URL+"/"), chromedp.SetUploadFiles(chromedp.CSS(`input[name="file"]`), []string{file}),
		chromedp.Submit(chromedp.CSS("#up")), chromedp.WaitVisible(chromedp.CSS("#done"))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		t.Fatalf("browser upload: %v; page: %.600s", err, body)
	}
	q := <-done
	if q.Get("bucket") != bucket || q.Get("key") != "uploads/hello.txt" || !strings.HasPrefix(q.Get("etag"), `"`) {
		t.Fatalf("redirect query %v", q)
	}
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("uploads/hello.txt")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	if string(b) != "hello from a browser form\n" || aws.ToString(out.ContentType) != "text/plain" || aws.ToString(out.ETag) != q.Get("etag") {
		t.Fatalf("stored %q as %q etag %q (redirect said %q)", b, aws.ToString(out.ContentType), aws.ToString(out.ETag), q.Get("etag"))
	}
}
