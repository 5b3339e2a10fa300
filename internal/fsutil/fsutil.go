// Package fsutil holds the file-system steps that durability rests on, so
// that the engine, filestore and the server take them the same way.
//
// A file's fsync makes its data durable, not its name: a name (a new
// file, a directory made, a rename, a link, a removal) is durable only
// once the directory holding it is fsynced. Every name that recovery
// needs must have its directory synced before anything depending on it is
// acknowledged.
package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SyncDir fsyncs the directory dir, making its entries durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// MkdirAll is os.MkdirAll that makes what it creates durable: each
// directory it creates, from the outermost down, is followed by an fsync
// of its parent. It also syncs dir's parent when dir already existed (a
// process that crashed between its mkdir and that sync may have left a
// name that is visible but not durable), except where the parent cannot
// be opened for reading.
func MkdirAll(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return &fs.PathError{Op: "mkdir", Path: p, Err: fs.ErrExist}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if len(missing) == 0 {
		if err := SyncDir(filepath.Dir(dir)); err != nil && !errors.Is(err, fs.ErrPermission) {
			return err
		}
		return nil
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := os.Mkdir(p, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		// Synced even when another process made it first: its own sync
		// may not have happened yet.
		if err := SyncDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}
