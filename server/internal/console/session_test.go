package console_test

import (
	"crypto/tls"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/internal/console"
	"github.com/latchkey/latchkey/server/internal/enginetest"
	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
	"github.com/latchkey/latchkey/server/servertest"
)

const (
	testToken  = "console-acl-token"
	testKey    = "CONSOLEKEY"
	testSecret = "console-secret-0123456789"
)

// clock is an injectable clock; its times keep a monotonic reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// handler is a console over an empty engine with an ACL token and S3
// credentials, on a clock the test moves.
func handler(t *testing.T, o console.Options) (*console.Handler, *clock) {
	t.Helper()
	e := enginetest.Open(t)
	c := &clock{t: time.Now()}
	o.Engine, o.Now = e, c.now
	o.ACLToken, o.S3Credentials = testToken, sigv4.Credentials{testKey: testSecret}.Lookup
	h, err := console.New(&o)
	if err != nil {
		t.Fatal(err)
	}
	return h, c
}

// do serves one request from addr and returns the recorder.
func do(h http.Handler, method, path, addr string, form url.Values, hdr ...string) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, path, body)
	req.RemoteAddr = addr + ":40000"
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func sessionCookie(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	cs := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(cs) != 1 || cs[0].Name != console.CookieName {
		t.Fatalf("login: %d, cookies %v, body %s", w.Code, cs, w.Body)
	}
	return cs[0]
}

// The cookie names a server-side session: random, HttpOnly, SameSite=Strict,
// and never the secret (nor any encoding of it).
func TestSessionCookieCarriesNoSecret(t *testing.T) {
	h, _ := handler(t, console.Options{})
	seen := map[string]bool{}
	for _, form := range []url.Values{{"token": {testToken}}, {"access_key": {testKey}, "secret_key": {testSecret}}, {"token": {testToken}}} {
		c := sessionCookie(t, do(h, "POST", "/ui/login", "192.0.2.1", form))
		for _, secret := range []string{testToken, testSecret} {
			for _, enc := range []string{secret, base64.RawURLEncoding.EncodeToString([]byte(secret)), base64.StdEncoding.EncodeToString([]byte(secret)), url.QueryEscape(secret)} {
				if strings.Contains(c.Value, enc) {
					t.Fatalf("cookie %q carries the secret %q", c.Value, secret)
				}
			}
		}
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" || len(c.Value) < 40 || seen[c.Value] {
			t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, not Secure over HTTP, a fresh random id", c)
		}
		seen[c.Value] = true
	}
}

// Under TLS the cookie is Secure.
func TestSessionCookieSecureUnderTLS(t *testing.T) {
	h, _ := handler(t, console.Options{})
	ts := httptest.NewTLSServer(h)
	defer ts.Close()
	c := ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	resp, err := c.PostForm(ts.URL+"/ui/login", url.Values{"token": {testToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cs := resp.Cookies(); len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies over TLS: %v", cs)
	}
}

// A cookie copied before logout is worth nothing after it.
func TestStolenCookieRefusedAfterLogout(t *testing.T) {
	h, _ := handler(t, console.Options{})
	c := sessionCookie(t, do(h, "POST", "/ui/login", "192.0.2.1", url.Values{"token": {testToken}}))
	stolen := c.Name + "=" + c.Value
	if w := do(h, "GET", "/-/api/kv", "198.51.100.7", nil, "Cookie", stolen); w.Code != http.StatusOK {
		t.Fatalf("before logout: %d %s", w.Code, w.Body)
	}
	if w := do(h, "POST", "/ui/logout", "192.0.2.1", url.Values{}, "Cookie", stolen); w.Code != http.StatusSeeOther {
		t.Fatalf("logout: %d", w.Code)
	}
	for _, p := range []string{"/-/api/kv", "/-/api/overview"} {
		if w := do(h, "GET", p, "198.51.100.7", nil, "Cookie", stolen); w.Code != http.StatusUnauthorized {
			t.Errorf("GET %s with the cookie after logout: %d %s", p, w.Code, w.Body)
		}
	}
	if w := do(h, "GET", "/ui/kv", "198.51.100.7", nil, "Cookie", stolen); w.Code != http.StatusSeeOther {
		t.Errorf("page with the cookie after logout: %d", w.Code)
	}
}

// A session ends SessionTTL after login, on the server's clock.
func TestSessionExpires(t *testing.T) {
	h, clk := handler(t, console.Options{SessionTTL: time.Hour})
	c := sessionCookie(t, do(h, "POST", "/ui/login", "192.0.2.1", url.Values{"token": {testToken}}))
	ck := c.Name + "=" + c.Value
	clk.add(time.Hour - time.Second)
	if w := do(h, "GET", "/-/api/kv", "192.0.2.1", nil, "Cookie", ck); w.Code != http.StatusOK {
		t.Fatalf("just before expiry: %d", w.Code)
	}
	clk.add(time.Second)
	if w := do(h, "GET", "/-/api/kv", "192.0.2.1", nil, "Cookie", ck); w.Code != http.StatusUnauthorized {
		t.Fatalf("at expiry: %d", w.Code)
	}
}

// Beyond MaxSessions a login ends the oldest session.
func TestMaxSessions(t *testing.T) {
	h, clk := handler(t, console.Options{MaxSessions: 2})
	var cks []string
	for range 3 {
		c := sessionCookie(t, do(h, "POST", "/ui/login", "192.0.2.1", url.Values{"token": {testToken}}))
		cks = append(cks, c.Name+"="+c.Value)
		clk.add(time.Second)
	}
	for i, want := range []int{http.StatusUnauthorized, http.StatusOK, http.StatusOK} {
		if w := do(h, "GET", "/-/api/kv", "192.0.2.1", nil, "Cookie", cks[i]); w.Code != want {
			t.Errorf("session %d: %d, want %d", i, w.Code, want)
		}
	}
}

// Login attempts are limited per client address, with a message that
// says so and when to retry; other addresses are not affected, and the
// budget refills with time.
func TestLoginRateLimit(t *testing.T) {
	h, clk := handler(t, console.Options{LoginBurst: 3, LoginInterval: 10 * time.Second})
	for i := range 3 {
		if w := do(h, "POST", "/ui/login", "192.0.2.1", url.Values{"token": {"guess"}}); w.Code != http.StatusForbidden {
			t.Fatalf("wrong token %d: %d", i, w.Code)
		}
	}
	w := do(h, "POST", "/ui/login", "192.0.2.1", url.Values{"token": {testToken}})
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "10" ||
		!strings.Contains(w.Body.String(), "too many login attempts from 192.0.2.1: try again in 10 s") || len(w.Result().Cookies()) != 0 {
		t.Fatalf("fourth attempt: %d, Retry-After %q, cookies %v\n%s", w.Code, w.Header().Get("Retry-After"), w.Result().Cookies(), w.Body)
	}
	sessionCookie(t, do(h, "POST", "/ui/login", "192.0.2.2", url.Values{"token": {testToken}}))
	// IPv6 clients count per /64.
	for i := range 3 {
		do(h, "POST", "/ui/login", "[2001:db8::"+string(rune('1'+i))+"]", url.Values{"token": {"guess"}})
	}
	if w := do(h, "POST", "/ui/login", "[2001:db8::99]", url.Values{"token": {testToken}}); w.Code != http.StatusTooManyRequests {
		t.Fatalf("same /64: %d", w.Code)
	}
	clk.add(10 * time.Second)
	sessionCookie(t, do(h, "POST", "/ui/login", "192.0.2.1", url.Values{"token": {testToken}}))
}

// Every credential given must be right: a right token with a wrong S3
// secret logs nobody in.
func TestLoginEveryCredentialChecked(t *testing.T) {
	h, _ := handler(t, console.Options{})
	for _, form := range []url.Values{
		{"token": {testToken}, "access_key": {testKey}, "secret_key": {"wrong"}},
		{"token": {"wrong"}, "access_key": {testKey}, "secret_key": {testSecret}},
		{"access_key": {"OTHER"}, "secret_key": {testSecret}},
		{},
	} {
		if w := do(h, "POST", "/ui/login", "192.0.2.1", form); w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
			t.Errorf("login with %v: %d, cookies %v", form, w.Code, w.Result().Cookies())
		}
	}
	c := sessionCookie(t, do(h, "POST", "/ui/login", "192.0.2.1", url.Values{"access_key": {testKey}, "secret_key": {testSecret}}))
	ck := c.Name + "=" + c.Value
	if w := do(h, "GET", "/-/api/s3", "192.0.2.1", nil, "Cookie", ck); w.Code != http.StatusOK {
		t.Errorf("S3 login, S3 view: %d", w.Code)
	}
	if w := do(h, "GET", "/-/api/kv", "192.0.2.1", nil, "Cookie", ck); w.Code != http.StatusForbidden {
		t.Errorf("S3 login, Consul view: %d", w.Code)
	}
}

// Sessions live in the server process only: a restart revokes them all.
func TestRestartRevokesSessions(t *testing.T) {
	dir := t.TempDir()
	srv := servertest.Start(t, &servertest.Options{Config: server.Config{DataDir: dir, ACLToken: testToken}})
	f := &fixture{t: t, srv: srv, token: testToken}
	ck := f.login(url.Values{"token": {testToken}})
	if code, _, b := f.get("/-/api/kv", "Cookie", ck); code != http.StatusOK {
		t.Fatalf("before restart: %d %s", code, b)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	f.srv = servertest.Start(t, &servertest.Options{Config: server.Config{DataDir: dir, ACLToken: testToken}})
	if code, _, b := f.get("/-/api/kv", "Cookie", ck); code != http.StatusUnauthorized {
		t.Fatalf("after restart: %d %s", code, b)
	}
}
