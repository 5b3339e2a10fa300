package storeurl

import (
	"errors"
	"path/filepath"
)

// StateDir returns latchkey's directory in the user's state directory, the
// parent of everything latchkey keeps by default: $XDG_STATE_HOME/latchkey
// when XDG_STATE_HOME is set to an absolute path (the XDG base directory
// rules ignore a relative one), else $HOME/.local/state/latchkey. It fails
// when neither is an absolute path. getenv reads the environment
// (os.Getenv, or a test's map).
//
// The default store is StateDir/store; the server's default data directory
// (server) is StateDir/server.
func StateDir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "latchkey"), nil
	}
	home := getenv("HOME")
	if home == "" || !filepath.IsAbs(home) {
		return "", errors.New("storeurl: no state directory: neither XDG_STATE_HOME nor HOME is set to an absolute path")
	}
	return filepath.Join(home, ".local", "state", "latchkey"), nil
}

// DefaultDir returns the directory of the default store, used when no
// store URL is given: StateDir/store, that is $XDG_STATE_HOME/latchkey/store
// or $HOME/.local/state/latchkey/store.
func DefaultDir(getenv func(string) string) (string, error) {
	dir, err := StateDir(getenv)
	if err != nil {
		return "", errors.New("storeurl: no default store: neither XDG_STATE_HOME nor HOME is set to an absolute path; give a store URL")
	}
	return filepath.Join(dir, "store"), nil
}

// DefaultURL returns the file:// URL of DefaultDir.
func DefaultURL(getenv func(string) string) (string, error) {
	dir, err := DefaultDir(getenv)
	if err != nil {
		return "", err
	}
	return FileURL(dir), nil
}
