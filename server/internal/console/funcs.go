package console

import (
	"fmt"
	"html/template"
	"net/url"
	"time"
)

var funcs = template.FuncMap{
	// list is the navigation: path, nav name, label.
	"list": func() [][3]string {
		return [][3]string{{"", "overview", "Overview"}, {"locks", "locks", "Locks"}, {"sessions", "sessions", "Sessions"},
			{"kv", "kv", "KV"}, {"publications", "publications", "Publications"}, {"s3", "s3", "S3"}}
	},
	// q builds a query string from name, value pairs (empty values left out).
	"q": func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		if len(v) == 0 {
			return ""
		}
		return "?" + v.Encode()
	},
	"dur": func(d time.Duration) string {
		switch {
		case d == 0:
			return "0"
		case d < time.Second:
			return d.Round(time.Millisecond).String()
		case d < time.Minute:
			return d.Round(100 * time.Millisecond).String()
		}
		return d.Round(time.Second).String()
	},
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"size": func(n int64) string {
		switch {
		case n < 1<<10:
			return fmt.Sprintf("%d B", n)
		case n < 1<<20:
			return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
		case n < 1<<30:
			return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		}
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	},
	"int64": func(n int) int64 { return int64(n) },
	"ms":    func(s float64) string { return fmt.Sprintf("%.2f ms", s*1000) },
	"count": func(c Count) string {
		if c.More {
			return fmt.Sprintf("%d+", c.N)
		}
		return fmt.Sprint(c.N)
	},
	"stateClass": func(s string) string {
		switch s {
		case StateHeld:
			return "st-held"
		case StateReleased:
			return "st-released"
		case StateStale:
			return "st-stale"
		case StateForced:
			return "st-forced"
		}
		return ""
	},
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:8] + "…"
		}
		return s
	},
}
