package main

import (
	"context"
	"errors"
	"flag"
	"net/url"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeurl"
)

// storeEnv is the environment variable naming the store when --store is
// not given.
const storeEnv = "LATCHKEY_STORE"

// storeFlagHelp is the help of every command's --store flag.
func storeFlagHelp() string {
	var schemes []string
	for _, s := range storeurl.Schemes() {
		schemes = append(schemes, s+"://")
	}
	return "store `URL`: " + strings.Join(schemes, ", ") + " (default $LATCHKEY_STORE, else the directory store in $XDG_STATE_HOME/latchkey/store or ~/.local/state/latchkey/store)"
}

// storeURLForms shows the shape of each scheme's URL in latchkey --help;
// the storeurl package doc has every parameter. The schemes come from
// storeurl.Schemes(): one missing here is shown as SCHEME://...
var storeURLForms = map[string]string{
	"azblob": "azblob://container/prefix?endpoint=URL",
	"consul": "consul://host:port/prefix",
	"etcd":   "etcd://host:port[,host:port]/prefix",
	"file":   "file:///dir",
	"gs":     "gs://bucket/prefix",
	"mem":    "mem://",
	"s3":     "s3://bucket/prefix?endpoint=URL&region=R",
}

// storeURLsHelp lists the URL form of every scheme storeurl opens,
// comma-separated, wrapped to lines of at most width after indent.
func storeURLsHelp(indent string, width int) string {
	var b strings.Builder
	line := 0
	schemes := storeurl.Schemes()
	for i, s := range schemes {
		form, ok := storeURLForms[s]
		if !ok {
			form = s + "://..."
		}
		if i < len(schemes)-1 {
			form += ","
		} else {
			form += "."
		}
		if line > 0 && line+1+len(form) > width {
			b.WriteString("\n")
			line = 0
		}
		if line == 0 {
			b.WriteString(indent)
		} else {
			b.WriteString(" ")
			line++
		}
		b.WriteString(form)
		line += len(form)
	}
	b.WriteString("\n")
	return b.String()
}

// addStoreFlag registers --store on fs; pass its value to openStore.
func addStoreFlag(fs *flag.FlagSet) *string {
	return fs.String("store", "", storeFlagHelp())
}

// storeURL picks the store: the command's --store flag, else latchkey's
// own (latchkey --store URL COMMAND), else $LATCHKEY_STORE, else the
// default directory store.
func storeURL(e *env, flagURL string) (string, error) {
	if flagURL != "" {
		return flagURL, nil
	}
	if e.store != "" {
		return e.store, nil
	}
	if u := e.getenv(storeEnv); u != "" {
		return u, nil
	}
	return storeurl.DefaultURL(e.getenv)
}

// numericVersions reports whether the store at URL u has decimal versions
// (a counter, an index, a revision or a generation); S3's and Azure's
// are ETags or version IDs.
func numericVersions(u string) bool {
	scheme, _, _ := strings.Cut(u, "://")
	switch strings.ToLower(scheme) {
	case "file", "mem", "consul", "etcd", "gs":
		return true
	}
	return false
}

// checkStoreURL refuses, as a usage error, a store URL that does not parse
// or names no known scheme, saying where it came from and what a good one
// looks like. Errors past that (a bad parameter, an unreachable host) are
// the store's to report.
func checkStoreURL(e *env, flagURL, u string) error {
	from := "--store"
	if flagURL == "" && e.store == "" {
		from = "$" + storeEnv
	}
	const example = "e.g. --store file:///var/lib/latchkey or --store consul://127.0.0.1:8500/prefix"
	p, err := url.Parse(u)
	var ue *url.Error
	switch {
	case errors.As(err, &ue):
		return usagef("%s: not a URL (%v); %s", from, ue.Err, example)
	case err != nil:
		return usagef("%s: not a URL (%v); %s", from, err, example)
	case p.Scheme == "" || !slices.Contains(storeurl.Schemes(), strings.ToLower(p.Scheme)):
		return usagef("%s: %q is not a store scheme (one of %s); %s", from, p.Scheme, strings.Join(storeurl.Schemes(), ", "), example)
	}
	return nil
}

// openStore opens the store chosen by storeURL. The caller closes it.
func openStore(ctx context.Context, e *env, flagURL string) (store.Store, error) {
	u, err := storeURL(e, flagURL)
	if err != nil {
		return nil, err
	}
	if flagURL != "" || e.store != "" || e.getenv(storeEnv) != "" {
		if err := checkStoreURL(e, flagURL, u); err != nil {
			return nil, err
		}
	}
	s, err := storeurl.Open(ctx, u)
	if err == nil && e.wrapStore != nil {
		s = e.wrapStore(s)
	}
	return s, err
}
