package console

import (
	"cmp"
	"embed"
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

	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/server/internal/consulapi"
	"github.com/latchkey/latchkey/server/internal/engine"
	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// Paths the console serves. The server routes both prefixes here.
const (
	UIPrefix  = "/ui/"
	APIPrefix = "/-/api/"
)

// CookieName is the cookie that carries the console session's id after
// login (never a credential).
const CookieName = "latchkey_console"

// Defaults of the session and login limits (Options).
const (
	DefaultSessionTTL    = 12 * time.Hour
	DefaultMaxSessions   = 1024
	DefaultLoginBurst    = 10
	DefaultLoginInterval = 6 * time.Second
	// maxLoginClients bounds the addresses the login limiter tracks.
	maxLoginClients = 4096
)

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
// written beside it; a negative number or duration is an error naming
// the field.
type Options struct {
	// Engine is the server's engine. Required.
	Engine *engine.Engine
	// ACLToken, when set, is required for Consul data: a console session
	// logged in with it, or X-Consul-Token / Authorization: Bearer on a
	// JSON request. Zero: Consul data is open (as the Consul API is).
	ACLToken string
	// S3Credentials, when set, finds the secret of an S3 access key; S3
	// data then needs a console session logged in with a key and its
	// secret, or a SigV4-signed JSON request. Nil: S3 data is open (the
	// S3 API serves unsigned requests).
	S3Credentials sigv4.SecretLookup
	// SessionTTL is how long a console session lasts after login.
	// Default DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxSessions caps the live console sessions; a login beyond it ends
	// the oldest. Default DefaultMaxSessions.
	MaxSessions int
	// LoginBurst login attempts are allowed at once from one client
	// address, then one every LoginInterval; beyond, 429. Defaults
	// DefaultLoginBurst and DefaultLoginInterval.
	LoginBurst    int
	LoginInterval time.Duration
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
	// S3Object reads the body of the current version of an object as GET
	// serves it (decrypted when sealed), refusing one over limit bytes;
	// ok is false when there is none (s3api.Handler.ConsoleObject). The
	// lease and publish records of s3:// stores in this server's buckets
	// are read through it. Nil: those views answer 501.
	S3Object func(bucket, key string, limit int64) (body []byte, index uint64, ok bool, err error)
	// PageSize is how many records one listing reads at most. Default
	// DefaultPageSize.
	PageSize int
	// Now is the clock (tests): session expiry and the login rate limit.
	// Default time.Now, whose values carry the monotonic clock.
	Now func() time.Time
	// Logger receives errors of page renders. Default slog.Default().
	Logger *slog.Logger
}

// Handler serves the console under UIPrefix and its JSON under APIPrefix.
type Handler struct {
	o        Options
	logins   *sessionStore
	limiter  *loginLimiter
	verifier *sigv4.Verifier // nil: S3 data is open
	pages    map[string]*template.Template
	static   http.Handler
	views    map[string]view
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

// errNoObjects: Options.S3Object is nil, so bucket views cannot be read.
var errNoObjects = errors.New("this console cannot read objects (no Options.S3Object)")

// withDefaults returns a copy of o with zero fields set to the defaults,
// or an error for a missing Engine or a negative field. A nil o has no
// Engine, which is required.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Engine == nil {
		return r, errors.New("console: no engine")
	}
	if err := optcheck.NonNegative(
		optcheck.Named("PageSize", r.PageSize), optcheck.Named("SessionTTL", r.SessionTTL),
		optcheck.Named("MaxSessions", r.MaxSessions), optcheck.Named("LoginBurst", r.LoginBurst),
		optcheck.Named("LoginInterval", r.LoginInterval),
	); err != nil {
		return r, fmt.Errorf("console: %w", err)
	}
	r.SessionTTL = cmp.Or(r.SessionTTL, DefaultSessionTTL)
	r.MaxSessions = cmp.Or(r.MaxSessions, DefaultMaxSessions)
	r.LoginBurst = cmp.Or(r.LoginBurst, DefaultLoginBurst)
	r.LoginInterval = cmp.Or(r.LoginInterval, DefaultLoginInterval)
	if r.Started.IsZero() {
		r.Started = time.Now()
	}
	r.Version = cmp.Or(r.Version, buildVersion())
	r.PageSize = cmp.Or(r.PageSize, DefaultPageSize)
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
	h := &Handler{o: o, pages: map[string]*template.Template{},
		logins:  newSessionStore(o.SessionTTL, o.MaxSessions),
		limiter: newLoginLimiter(o.LoginBurst, o.LoginInterval, maxLoginClients)}
	if o.S3Credentials != nil {
		h.verifier = sigv4.New(o.S3Credentials, &sigv4.Options{Now: o.Now})
	}
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
	a := h.Access(r)
	if !a.any() {
		http.Redirect(w, r, UIPrefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	if page == "" {
		page = "overview"
	}
	data, served, err := h.runView(w, r, a, page, "no such page: "+page)
	switch {
	case served:
	case err != nil:
		h.renderError(w, r, statusOf(err), err.Error())
	default:
		h.render(w, r, http.StatusOK, page, redact(data, a))
	}
}

func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("Cache-Control", "no-store")
	if !getOrHead(w, r) {
		return
	}
	a := h.Access(r)
	if !a.any() {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "login required: log in at " + UIPrefix +
			"login, or send the ACL token as X-Consul-Token, or sign the request with an S3 key (SigV4)"})
		return
	}
	data, served, err := h.runView(w, r, a, name, "no such endpoint: "+APIPrefix+name)
	switch {
	case served:
	case err != nil:
		writeJSON(w, statusOf(err), map[string]string{"error": err.Error()})
	default:
		writeJSON(w, http.StatusOK, redact(data, a))
	}
}

// runView is what a page and its API endpoint share, in this order: the
// access check, the raw download (which answers the request itself:
// served), then the view. An error's status is statusOf's; missing is
// the message for a name that is no view.
func (h *Handler) runView(w http.ResponseWriter, r *http.Request, a Access, name, missing string) (data any, served bool, err error) {
	if msg := denied(a, need(name, r)); msg != "" {
		return nil, false, statusError{http.StatusForbidden, msg}
	}
	if name == "kv/raw" {
		h.kvRaw(w, r)
		return nil, true, nil
	}
	v, ok := h.views[name]
	if !ok {
		return nil, false, statusError{http.StatusNotFound, missing}
	}
	data, err = v(h, r)
	return data, false, err
}

// statusError is a view error with its own status.
type statusError struct {
	status int
	msg    string
}

func (e statusError) Error() string { return e.msg }

func statusOf(err error) int {
	var br errBadRequest
	var se statusError
	switch {
	case errors.As(err, &se):
		return se.status
	case errors.As(err, &br):
		return http.StatusBadRequest
	case errors.Is(err, errNotFound):
		return http.StatusNotFound
	case errors.Is(err, errNoObjects):
		return http.StatusNotImplemented
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
	p := page{Title: titles[name], Nav: nav, Auth: h.protected(), Data: data, Status: code,
		Refresh: name == "locks" || name == "sessions" || name == "overview"}
	if s, ok := data.(string); ok && name == "error" {
		p.Error, p.Data = s, nil
	}
	if m, ok := data.(withMsg); ok {
		p.Error, p.Data = m.msg, m.data
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

// renderMsg renders page name with data and an error message.
func (h *Handler) renderMsg(w http.ResponseWriter, r *http.Request, code int, name string, data any, msg string) {
	h.render(w, r, code, name, withMsg{data, msg})
}

// withMsg carries an error message beside a page's data to render.
type withMsg struct {
	data any
	msg  string
}

// param returns a query parameter, refusing one longer than maxParam.
func param(r *http.Request, name string) (string, error) {
	v := r.URL.Query().Get(name)
	if len(v) > maxParam {
		return "", badRequest("parameter %s is longer than %d bytes", name, maxParam)
	}
	return v, nil
}
