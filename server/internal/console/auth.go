package console

import (
	"crypto/subtle"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// Who may see what. The console never shows what the caller could not
// read through the API itself:
//
//   - Consul data needs the ACL token when the server has one: a session
//     logged in with it, or the token on the request (X-Consul-Token or
//     Authorization: Bearer).
//   - S3 data needs the S3 credentials unless the S3 API serves unsigned
//     requests (Options.S3Credentials nil): a session logged in with an
//     access key and its secret, or a request signed with SigV4.
//   - When either is protected, every page and JSON answer needs a login
//     (a session, or a credential on the request); what the login did not
//     prove is withheld (403 for a view of it, left out of the overview).
//     Data that needs no credential comes with any login.
//   - When neither is protected the console is open, as the APIs are; the
//     server then answers only loopback and allowed Host names (see
//     server).

// protected reports whether any data needs a credential.
func (h *Handler) protected() bool { return h.o.ACLToken != "" || h.o.S3Credentials != nil }

// open is the access that needs no credential.
func (h *Handler) open() Access {
	return Access{Consul: h.o.ACLToken == "", S3: h.o.S3Credentials == nil}
}

// Access returns what r may read: everything when nothing is protected;
// otherwise what its session or credentials prove, plus the open data if
// they prove anything. The server asks it for /-/metrics.
func (h *Handler) Access(r *http.Request) Access {
	if !h.protected() {
		return Access{Consul: true, S3: true}
	}
	var a Access
	if c, err := r.Cookie(CookieName); err == nil {
		a, _ = h.logins.lookup(c.Value, h.o.Now())
	}
	if h.o.ACLToken != "" && h.tokenOK(requestToken(r)) {
		a.Consul = true
	}
	if h.verifier != nil && sigv4Request(r) {
		if _, body, err := h.verifier.Verify(r); err == nil {
			body.Close()
			a.S3 = true
		}
	}
	if !a.any() {
		return a
	}
	return a.or(h.open())
}

// requestToken is the ACL token a JSON client sends: X-Consul-Token, else
// Authorization: Bearer.
func requestToken(r *http.Request) string {
	if t := r.Header.Get("X-Consul-Token"); t != "" {
		return t
	}
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// sigv4Request reports a request that carries an AWS signature (not a
// bearer token).
func sigv4Request(r *http.Request) bool {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return false
	}
	return sigv4.Signed(r)
}

func (h *Handler) tokenOK(tok string) bool {
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(h.o.ACLToken)) == 1
}

// s3OK checks an access key and its secret, in constant time for the
// secret.
func (h *Handler) s3OK(key, secret string) bool {
	if h.o.S3Credentials == nil || key == "" || secret == "" {
		return false
	}
	want, ok := h.o.S3Credentials(key)
	return ok && subtle.ConstantTimeCompare([]byte(secret), []byte(want)) == 1
}

// need is the access a view requires; the overview requires only a login
// and leaves out what the login does not cover.
func need(view string, r *http.Request) Access {
	switch view {
	case "overview":
		return Access{}
	case "s3":
		return Access{S3: true}
	case "locks", "publications", "publication":
		if r.URL.Query().Get("bucket") != "" {
			return Access{S3: true}
		}
	}
	return Access{Consul: true}
}

// denied returns why a does not cover n, or "" when it does.
func denied(a, n Access) string {
	switch {
	case n.S3 && !a.S3:
		return "this view shows S3 data: log in at " + UIPrefix + "login with an S3 access key and its secret, or sign the request with SigV4"
	case n.Consul && !a.Consul:
		return "this view shows Consul data: log in at " + UIPrefix + "login with the ACL token, or send it as X-Consul-Token"
	}
	return ""
}

// sameOrigin refuses a POST whose Origin (or, lacking it, Referer) names
// another origin: together with SameSite=Strict this keeps other sites
// from posting the login or logout forms.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		o = r.Header.Get("Referer")
	}
	if o == "" {
		return true // not a browser, or a browser that sends neither
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// safeNext returns next if it is a console path, else the overview.
func safeNext(next string) string {
	if strings.HasPrefix(next, UIPrefix) && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") &&
		!strings.HasPrefix(next, UIPrefix+"login") {
		return next
	}
	return UIPrefix
}

// loginPage is what the login template shows.
type loginPage struct {
	Token, S3 bool   // which credentials the form asks for
	TTL       string // e.g. "12h"
}

// shortDur is d without zero minutes and seconds ("12h", not "12h0m0s").
func shortDur(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, code int, msg string) {
	h.renderMsg(w, r, code, "login", loginPage{Token: h.o.ACLToken != "", S3: h.o.S3Credentials != nil, TTL: shortDur(h.o.SessionTTL)}, msg)
}

// login serves the login form (GET) and checks it (POST): the ACL token,
// an S3 access key with its secret, or both. Every credential given must
// be right; the session gets what they prove.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if !h.protected() {
			http.Redirect(w, r, UIPrefix, http.StatusSeeOther)
			return
		}
		h.renderLogin(w, r, http.StatusOK, "")
	case http.MethodPost:
		h.loginPost(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (h *Handler) loginPost(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		h.renderLogin(w, r, http.StatusForbidden, "cross-origin login refused")
		return
	}
	if !h.protected() {
		http.Redirect(w, r, UIPrefix, http.StatusSeeOther)
		return
	}
	addr := clientAddr(r)
	if ok, wait := h.limiter.allow(addr, h.o.Now()); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		h.renderLogin(w, r, http.StatusTooManyRequests, fmt.Sprintf(
			"too many login attempts from %s: try again in %d s (at most %d at once, then one every %s)",
			addr, secs, h.o.LoginBurst, h.o.LoginInterval))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		h.renderLogin(w, r, http.StatusBadRequest, "bad form")
		return
	}
	tok, key, secret := r.PostForm.Get("token"), r.PostForm.Get("access_key"), r.PostForm.Get("secret_key")
	var a Access
	bad := tok == "" && key == "" && secret == ""
	if tok != "" {
		a.Consul = h.tokenOK(tok)
		bad = bad || !a.Consul
	}
	if key != "" || secret != "" {
		a.S3 = h.s3OK(key, secret)
		bad = bad || !a.S3
	}
	if bad {
		h.renderLogin(w, r, http.StatusForbidden, "those are not this server's credentials")
		return
	}
	id := h.logins.create(a.or(h.open()), h.o.Now())
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
}

// logout ends the session named by the cookie, on the server, and clears
// the cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !sameOrigin(r) {
		http.Error(w, "cross-origin logout refused", http.StatusForbidden)
		return
	}
	if c, err := r.Cookie(CookieName); err == nil {
		h.logins.revoke(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, UIPrefix+"login", http.StatusSeeOther)
}
