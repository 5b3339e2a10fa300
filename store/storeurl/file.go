package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/filestore"
)

// openFile opens file:///abs/dir as a directory store.
func openFile(_ context.Context, u *url.URL) (store.Store, error) {
	if u.Opaque != "" || (u.Path == "" && u.Host != "") {
		return nil, fmt.Errorf("want file:///absolute/dir (three slashes), not a relative path")
	}
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("file URL names host %q; only local directories are supported", u.Host)
	}
	if u.User != nil {
		return nil, errors.New("file URL takes no user")
	}
	if u.Path == "" || !filepath.IsAbs(filepath.FromSlash(u.Path)) {
		return nil, errors.New("want file:///absolute/dir: no directory given")
	}
	q, err := params(u, "stripes", "poll")
	if err != nil {
		return nil, err
	}
	var o filestore.Options
	if v := q.Get("stripes"); v != "" {
		if o.Stripes, err = strconv.Atoi(v); err != nil || o.Stripes < 1 {
			return nil, fmt.Errorf("stripes=%q: want a positive integer", v)
		}
	}
	if v := q.Get("poll"); v != "" {
		if o.PollInterval, err = time.ParseDuration(v); err != nil || o.PollInterval <= 0 {
			return nil, fmt.Errorf("poll=%q: want a positive duration such as 100ms", v)
		}
	}
	return filestore.Open(filepath.FromSlash(u.Path), &o)
}

// FileURL returns the file:// URL of the absolute directory dir.
func FileURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}
