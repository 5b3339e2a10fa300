package console

import (
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/latchkey/latchkey/internal/consulapi"
	"github.com/latchkey/latchkey/internal/engine"
)

// Paths the console serves. The server routes both prefixes here.
const (
	UIPrefix  = "/ui/"
	APIPrefix = "/-/api/"
)

// CookieName is the cookie that carries the ACL token after login.
const CookieName = "latchkey_console"

// DefaultPageSize is how many records one listing reads at most.
const DefaultPageSize = 100

// maxParam bounds every query parameter (keys are at most 1 KiB in the
// store contract; a prefix or cursor is no longer than a key plus a byte).
const maxParam = 2048

// csp is the Content-Security-Policy of every answer: nothing but this
// origin's own scripts, styles and JSON; no inline script or style; no
// framing; forms post only here.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure the console. Every zero field takes the default
// written beside it; a negative PageSize is an error.
type Options struct {
	// Engine is the server's engine. Required.
	Engine *engine.Engine
	// ACLToken, when set, is required: in the login cookie for pages and
	// JSON, or as X-Consul-Token / Authorization: Bearer for JSON.
	ACLToken string
	// Started is when the server started (uptime). Default: New's time.
	Started time.Time
	// Version is the server version. Default: the module version from
	// the build info.
	Version string
	// Metrics is the registry /-/metrics exports; the overview's charts
	// read the same counters. Nil: no charts.
	Metrics prometheus.Gatherer
	// ConsulStats is the Consul API's in-memory state (blocking queries,
	// session timers). Nil: not shown.
	ConsulStats func() consulapi.Stats
	// SessionExpiry tells when a TTL session is invalidated unless renewed
	// (the Consul API's in-memory timer). Nil: not shown.
	SessionExpiry func(id string) (time.Time, bool)
	// PageSize is how many records one listing reads at most. Default
	// DefaultPageSize.
	PageSize int
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
	// Logger receives errors of page renders. Default slog.Default().
	Logger *slog.Logger
}

// Handler serves the console under UIPrefix and its JSON under APIPrefix.
type Handler struct {
	o      Options
	pages  map[string]*template.Template
	static http.Handler
	views  map[string]view
}

// view reads the data of one page (the same for HTML and JSON).
type view func(h *Handler, r *http.Request) (any, error)

// errBadRequest marks a view error caused by the request.
type errBadRequest struct{ msg string }

func (e errBadRequest) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return errBadRequest{fmt.Sprintf(format, args...)}
}

var errNotFound = errors.New("not found")

// withDefaults returns a copy of o with zero fields set to the defaults,
// or an error for a missing Engine or a negative PageSize. A nil o has no
// Engine, which is required.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	switch {
	case r.Engine == nil:
		return r, errors.New("console: no engine")
	case r.PageSize < 0:
		return r, fmt.Errorf("console: negative Options.PageSize %d (zero means DefaultPageSize)", r.PageSize)
	}
	if r.Started.IsZero() {
		r.Started = time.Now()
	}
	if r.Version == "" {
		r.Version = buildVersion()
	}
	if r.PageSize == 0 {
		r.PageSize = DefaultPageSize
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r, nil
}

// New builds the console.
func New(opts *Options) (*Handler, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Handler{o: o, pages: map[string]*template.Template{}}
	h.views = map[string]view{
		"overview":     (*Handler).overview,
		"locks":        (*Handler).locks,
		"sessions":     (*Handler).sessions,
		"kv":           (*Handler).kv,
		"publications": (*Handler).publications,
		"publication":  (*Handler).publication,
		"s3":           (*Handler).s3,
	}
	for _, name := range []string{"overview", "locks", "sessions", "kv", "publications", "publication", "s3", "login", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		h.pages[name] = t
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	h.static = http.StripPrefix(UIPrefix+"static/", http.FileServerFS(sub))
	return h, nil
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// ServeHTTP serves UIPrefix and APIPrefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin") // "no-referrer" would make chromium send Origin: null on our own form posts
	p := r.URL.Path
	if api, ok := strings.CutPrefix(p, APIPrefix); ok {
		h.serveAPI(w, r, api)
		return
	}
	if p == "/ui" {
		http.Redirect(w, r, UIPrefix, http.StatusMovedPermanently)
		return
	}
	page, ok := strings.CutPrefix(p, UIPrefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasPrefix(page, "static/"):
		if !getOrHead(w, r) {
			return
		}
		hd.Set("Cache-Control", "public, max-age=3600")
		h.static.ServeHTTP(w, r)
		return
	case page == "login":
		h.login(w, r)
		return
	case page == "logout":
		h.logout(w, r)
		return
	}
	hd.Set("Cache-Control", "no-store")
	if !getOrHead(w, r) {
		return
	}
	if !h.authorized(r) {
		http.Redirect(w, r, UIPrefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	if page == "" {
		page = "overview"
	}
	if page == "kv/raw" {
		h.kvRaw(w, r)
		return
	}
	v, ok := h.views[page]
	if !ok {
		h.renderError(w, r, http.StatusNotFound, "no such page: "+page)
		return
	}
	data, err := v(h, r)
	if err != nil {
		h.renderError(w, r, statusOf(err), err.Error())
		return
	}
	h.render(w, r, http.StatusOK, page, data)
}

func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("Cache-Control", "no-store")
	if !getOrHead(w, r) {
		return
	}
	if !h.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "ACL token required: log in at " + UIPrefix + "login or send X-Consul-Token"})
		return
	}
	if name == "kv/raw" {
		h.kvRaw(w, r)
		return
	}
	v, ok := h.views[name]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such endpoint: " + APIPrefix + name})
		return
	}
	data, err := v(h, r)
	if err != nil {
		writeJSON(w, statusOf(err), map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, data)
}

func statusOf(err error) int {
	var br errBadRequest
	switch {
	case errors.As(err, &br):
		return http.StatusBadRequest
	case errors.Is(err, errNotFound):
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

func getOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// page is what the layout template gets.
type page struct {
	Title   string
	Nav     string
	Auth    bool // an ACL token is required (show "log out")
	Refresh bool // app.js re-fetches the page every few seconds
	Data    any
	Error   string
	Status  int
}

var titles = map[string]string{
	"overview": "Overview", "locks": "Locks", "sessions": "Sessions", "kv": "KV",
	"publications": "Publications", "publication": "Publication", "s3": "S3", "login": "Log in", "error": "Error",
}

var navOf = map[string]string{"publication": "publications"}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	nav := name
	if n, ok := navOf[name]; ok {
		nav = n
	}
	p := page{Title: titles[name], Nav: nav, Auth: h.o.ACLToken != "", Data: data, Status: code,
		Refresh: name == "locks" || name == "sessions" || name == "overview"}
	if s, ok := data.(string); ok && (name == "error" || name == "login") {
		p.Error, p.Data = s, nil
	}
	var b strings.Builder
	if err := h.pages[name].Execute(&b, p); err != nil {
		h.o.Logger.Error("console: render", "page", name, "err", err)
		http.Error(w, "console: render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		w.Write([]byte(b.String()))
	}
}

func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	h.render(w, r, code, "error", msg)
}

// authorized reports whether the request carries the ACL token (or none
// is needed): the login cookie, X-Consul-Token or Authorization: Bearer.
// Every comparison is constant-time.
func (h *Handler) authorized(r *http.Request) bool {
	if h.o.ACLToken == "" {
		return true
	}
	if c, err := r.Cookie(CookieName); err == nil {
		if b, err := base64.RawURLEncoding.DecodeString(c.Value); err == nil && h.tokenOK(string(b)) {
			return true
		}
	}
	if h.tokenOK(r.Header.Get("X-Consul-Token")) {
		return true
	}
	a := r.Header.Get("Authorization")
	return len(a) > 7 && strings.EqualFold(a[:7], "bearer ") && h.tokenOK(strings.TrimSpace(a[7:]))
}

func (h *Handler) tokenOK(tok string) bool {
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(h.o.ACLToken)) == 1
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

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if h.o.ACLToken == "" {
			http.Redirect(w, r, UIPrefix, http.StatusSeeOther)
			return
		}
		h.render(w, r, http.StatusOK, "login", "")
	case http.MethodPost:
		if !sameOrigin(r) {
			h.render(w, r, http.StatusForbidden, "login", "cross-origin login refused")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		if err := r.ParseForm(); err != nil {
			h.render(w, r, http.StatusBadRequest, "login", "bad form")
			return
		}
		if h.o.ACLToken == "" {
			http.Redirect(w, r, UIPrefix, http.StatusSeeOther)
			return
		}
		tok := r.PostForm.Get("token")
		if !h.tokenOK(tok) {
			h.render(w, r, http.StatusForbidden, "login", "that is not the server's ACL token")
			return
		}
		// base64: a token may hold bytes a cookie value cannot (space, ';', '"').
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: base64.RawURLEncoding.EncodeToString([]byte(tok)), Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

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
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, UIPrefix+"login", http.StatusSeeOther)
}

// param returns a query parameter, refusing one longer than maxParam.
func param(r *http.Request, name string) (string, error) {
	v := r.URL.Query().Get(name)
	if len(v) > maxParam {
		return "", badRequest("parameter %s is longer than %d bytes", name, maxParam)
	}
	return v, nil
}
