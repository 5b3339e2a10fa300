package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/latchkey/latchkey/publish"
)

// pubFile is one file to publish: where it is on disk and the name it is
// published under.
type pubFile struct {
	path, name string
	size       int64
}

func totalSize(files []pubFile) int64 {
	var n int64
	for _, f := range files {
		n += f.size
	}
	return n
}

// publishSources turns publish's arguments into the files to publish:
// each FILE, every file under each DIRECTORY (recursively, named relative
// to that directory, or to dir with -C), and the paths read from filesFrom ("-": stdin; one
// a line, or NUL-separated with nul). Names are relative to dir (-C) when
// given. Everything is checked before anything is written.
func publishSources(e *env, dir, filesFrom string, nul bool, args []string) ([]pubFile, error) {
	names := args
	if filesFrom != "" {
		more, err := readFileList(e, filesFrom, nul)
		if err != nil {
			return nil, err
		}
		names = append(append([]string(nil), args...), more...)
	}
	var out []pubFile
	seen := map[string]bool{}
	add := func(p, name string, size int64) error {
		n, err := objectName(name)
		if err != nil {
			return usagef("publish: %v", err)
		}
		if seen[n] {
			return usagef("publish: %q named twice", n)
		}
		seen[n] = true
		out = append(out, pubFile{path: p, name: n, size: size})
		return nil
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			// Said before the name's rules: a DIRECTORY may be absolute,
			// so "absolute paths are refused" would be wrong for a typo.
			return nil, failf("publish: %v", err) // before anything is written
		}
		if !fi.IsDir() {
			if _, nerr := objectName(name); nerr != nil {
				return nil, usagef("publish: %v", nerr)
			}
		}
		if !fi.IsDir() {
			if err := add(p, name, fi.Size()); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if !d.Type().IsRegular() {
				return usagef("publish: %s is not a regular file", q)
			}
			base := p // publish DIR: names relative to DIR
			if dir != "" {
				base = dir // -C DIR: names relative to DIR, as tar -C
			}
			rel, err := filepath.Rel(base, q)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return add(q, rel, info.Size())
		})
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return nil, err
			}
			return nil, failf("publish: %v", err)
		}
	}
	if len(out) == 0 {
		return nil, usagef("publish: no files to publish")
	}
	return out, nil
}

// readFileList reads paths one a line (or NUL-separated), skipping empty
// ones.
func readFileList(e *env, from string, nul bool) ([]string, error) {
	var r io.Reader = e.stdin
	if from != "-" {
		fh, err := os.Open(from)
		if err != nil {
			return nil, failf("publish: --files-from: %v", err)
		}
		defer fh.Close()
		r = fh
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if nul {
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			if i := bytes.IndexByte(data, 0); i >= 0 {
				return i + 1, data[:i], nil
			}
			if atEOF && len(data) > 0 {
				return len(data), data, nil
			}
			return 0, nil, nil
		})
	}
	var out []string
	for sc.Scan() {
		if l := strings.TrimSuffix(sc.Text(), "\r"); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, failf("publish: --files-from %s: %v", from, err)
	}
	return out, nil
}

// putFailed is the one line publish prints when writing the objects
// failed: what happened, how far it got, and what is left behind. An
// interruption (Ctrl-C, SIGTERM, --timeout) is said as one, whatever the
// store's request said of being cut off.
func putFailed(ctx context.Context, w *publish.Writer, prefix string, done, total int, err error) error {
	if ctx.Err() != nil {
		return publishInterrupted(ctx, w, prefix, done, total, err)
	}
	left := abortLeft(ctx, w)
	line, cause := plainMessage(err, capErrors(err).Error())
	return &exitError{code: exitFail, cause: cause,
		msg: fmt.Sprintf("publish %s: failed after %d of %d objects; %s: %s", prefix, done, total, left, line)}
}

// publishInterrupted is the line of a publish whose context ended before
// the commit: nothing was committed, and its staged objects are deleted,
// or left for gc. main turns ctx's "context canceled" into "interrupted
// by SIGINT" and the exit code into 128+N.
func publishInterrupted(ctx context.Context, w *publish.Writer, prefix string, done, total int, err error) error {
	left := abortLeft(ctx, w)
	ee := &exitError{code: exitFail,
		msg: fmt.Sprintf("publish %s: %v after %d of %d objects; nothing committed, readers still see the current generation; %s",
			prefix, ctx.Err(), done, total, left)}
	if err != nil {
		ee.cause = identifierWords.Replace(err.Error())
	}
	return ee
}

// abortLeft deletes the objects w staged, within settleGrace when ctx has
// ended, and says what is left.
func abortLeft(ctx context.Context, w *publish.Writer) string {
	actx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if ctx.Err() != nil {
		actx, cancel = context.WithTimeout(actx, settleGrace)
	}
	defer cancel()
	if err := w.Abort(actx); err != nil {
		return fmt.Sprintf("staged objects of generation %s left for gc, which removes them after its grace (%v)", w.ID(), publish.DefaultGrace)
	}
	return "staged objects deleted"
}
