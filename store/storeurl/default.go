package storeurl

import (
	"errors"
	"path/filepath"
)

// DefaultDir returns the directory of the default store, used when no
// store URL is given: $XDG_STATE_HOME/latchkey/store when XDG_STATE_HOME
// is set to an absolute path (the XDG base directory rules ignore a
// relative one), else $HOME/.local/state/latchkey/store. getenv reads the
// environment (os.Getenv, or a test's map).
func DefaultDir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "latchkey", "store"), nil
	}
	home := getenv("HOME")
	if home == "" || !filepath.IsAbs(home) {
		return "", errors.New("storeurl: no default store: neither XDG_STATE_HOME nor HOME is set to an absolute path; give a store URL")
	}
	return filepath.Join(home, ".local", "state", "latchkey", "store"), nil
}

// DefaultURL returns the file:// URL of DefaultDir.
func DefaultURL(getenv func(string) string) (string, error) {
	dir, err := DefaultDir(getenv)
	if err != nil {
		return "", err
	}
	return FileURL(dir), nil
}
