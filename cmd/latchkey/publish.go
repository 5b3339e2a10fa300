package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/fsutil"
	"github.com/latchkey/latchkey/lease"
	"github.com/latchkey/latchkey/publish"
	"github.com/latchkey/latchkey/store"
)

// addPublicationFlags registers the flags of every command on a
// publication: --store (pass it to openStore) and --prefix, required.
func addPublicationFlags(fs *flag.FlagSet) (storeURL, prefix *string) {
	return addStoreFlag(fs), fs.String("prefix", "", "publication `prefix` (required)")
}

func runPublish(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && publishSubcommands[args[0]] != nil {
		return publishSubcommands[args[0]](ctx, e, args[1:])
	}
	f := newCmdFlags(e, "publish", "--prefix P [--lease KEY] FILE...",
		`Publish FILEs as one generation under prefix P: they become visible together,
by one compare-and-swap of P/pointer, or not at all. Each FILE is stored under
its relative path as given (absolute paths and '..' are refused); a DIR
publishes every file under it, named relative to DIR; -C DIR names every
path relative to DIR (as tar -C); --files-from reads more paths (names with spaces, or
NUL-separated with -0, as from find -print0). Prints the
committed generation, and on a terminal its progress on stderr. With
--lease KEY, the lease at KEY is held while publishing and its fencing
token is recorded in the pointer: a publisher with an older token is
refused; --wait D bounds the wait for it as lock run's --wait does.`)
	f.addHelp(`  latchkey publish --prefix site -C build .
  find docs -name '*.html' -print0 | latchkey publish --prefix site --files-from - -0
  latchkey publish --prefix site --lease locks/site --wait 1m -C build .
`, `  0   published; the generation is printed
  1   not published: "superseded" (another publisher committed first, or
      one with a newer lease token), a bad path, a store failure; nothing
      of ours is left visible
  2   bad command line
  74  the commit was sent but never answered: it may or may not have
      applied (publish current tells)
  130, 143  interrupted before the commit: nothing committed
`, `docs/cli.md, "Interrupted"`)
	storeFlag, prefix := addPublicationFlags(f.FlagSet)
	leaseKey := f.String("lease", "", "hold the lease at `KEY` while publishing and fence the commit with its token")
	chdir := f.String("C", "", "name files relative to `DIR` (as tar -C)")
	filesFrom := f.String("files-from", "", "also publish the paths listed in `FILE` (- for stdin), one a line")
	nul := f.Bool("0", false, "with --files-from: paths are NUL-separated (find -print0)")
	wait := time.Duration(-1)
	f.Func("wait", "with --lease, give up acquiring it after `D` (default: wait as long as it takes; 0: try once)", func(v string) error {
		d, err := time.ParseDuration(v)
		if err == nil && d < 0 {
			err = errors.New("negative")
		}
		wait = d
		return err
	})
	if err := f.parse(args); err != nil {
		return err
	}
	if *prefix == "" || (f.NArg() == 0 && *filesFrom == "") {
		return usagef("publish: usage: latchkey publish --prefix P [--lease KEY] [-C DIR] [--files-from FILE|-] FILE|DIR...")
	}
	if wait >= 0 && *leaseKey == "" {
		return usagef("publish: --wait needs --lease KEY")
	}
	files, err := publishSources(e, *chdir, *filesFrom, *nul, f.Args())
	if err != nil {
		return err
	}
	s, err := openStore(ctx, e, *storeFlag)
	if err != nil {
		return err
	}
	defer s.Close()
	if *leaseKey == "" {
		return publishFiles(ctx, e, s, *prefix, 0, files)
	}
	lk, err := lease.NewLocker(s, *leaseKey, nil)
	if err != nil {
		return err
	}
	l, err := acquireForRun(ctx, lk, wait, &waitReporter{e: e, key: *leaseKey, quiet: true})
	if err != nil {
		return failf("%s", heldSaid(fmt.Sprintf("publish: lease %q: %v", *leaseKey, err), err))
	}
	l.KeepAlive()
	// The commit's context ends when the lease is lost, before anyone
	// else can hold it.
	pctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(l.Context(), cancel)
	err = publishFiles(pctx, e, s, *prefix, l.Token(), files)
	stop()
	cancel()
	lost := errors.Is(l.Err(), lease.ErrLost)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), lk.Options().TTL)
	defer rcancel()
	l.Release(rctx)
	if err == nil && lost {
		return failf("publish: lease %q lost while publishing", *leaseKey)
	}
	return err
}

// objectName is the name a FILE argument is published under: its
// relative path, cleaned, with '/' separators. Absolute paths, paths with
// '..' and names that are not valid object names are refused.
func objectName(file string) (string, error) {
	if filepath.IsAbs(file) || strings.HasPrefix(file, "/") {
		return "", fmt.Errorf("%q: absolute paths are refused; give paths relative to the current directory", file)
	}
	for _, seg := range strings.Split(filepath.ToSlash(file), "/") {
		if seg == ".." {
			return "", fmt.Errorf("%q: '..' is refused", file)
		}
	}
	name := path.Clean(filepath.ToSlash(file))
	if err := publish.ValidateName(name); err != nil {
		return "", fmt.Errorf("%q: %w", file, err)
	}
	return name, nil
}

func publishFiles(ctx context.Context, e *env, s store.Store, prefix string, token uint64, files []pubFile) error {
	w, err := publish.Begin(ctx, s, prefix, &publish.Options{Token: token})
	if errors.Is(err, publish.ErrFenced) {
		return failf("publish %s: superseded: a publisher with a newer lease token committed (%v)", prefix, err)
	}
	if err != nil {
		return err
	}
	prog := newProgress(e.stderr, len(files), totalSize(files))
	defer prog.finish() // the result or the error starts a line of its own
	for i, pf := range files {
		if err := putFile(ctx, w, pf, prog); err != nil {
			return putFailed(ctx, w, prefix, i, len(files), err)
		}
		prog.done(pf.size)
	}
	prog.finish()
	if ctx.Err() != nil {
		return publishInterrupted(ctx, w, prefix, len(files), len(files), nil)
	}
	c, err := w.Commit(ctx)
	if errors.Is(err, publish.ErrSuperseded) || errors.Is(err, publish.ErrFenced) {
		return failf("publish %s: superseded: another publisher committed first (%v)", prefix, err)
	}
	if mayHaveApplied(err) {
		// No grace for the commit: under --lease its context ends when
		// the lease is lost, and it must not land later than that.
		return unknownWrite(ctx, "publish "+prefix, "committing", "latchkey publish current", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, c.Generation)
	return nil
}

func putFile(ctx context.Context, w *publish.Writer, pf pubFile, prog *progress) error {
	fh, err := os.Open(pf.path)
	if err != nil {
		return err
	}
	defer fh.Close()
	return w.Put(ctx, pf.name, prog.reader(fh))
}

func runSnapshot(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		args = []string{"get", "--help"} // snapshot's one subcommand
	}
	if len(args) == 0 || args[0] != "get" {
		return usagef("snapshot: usage: latchkey snapshot get --prefix P --out DIR")
	}
	f := newCmdFlags(e, "snapshot get", "--prefix P --out DIR",
		`Write the files of the generation currently published under P into DIR,
which must not exist or be empty (with --force, a DIR that holds files is
replaced whole). The files are written into a new directory beside DIR,
which is renamed to DIR once all are written, checked and synced: DIR
holds one whole generation or nothing. Prints the generation.`)
	f.addHelp("  latchkey snapshot get --prefix site --out /srv/www/site --force\n", `  0   written; the generation is printed
  1   nothing published, --out not empty (without --force), an error
  2   bad command line
`, "")
	storeFlag, prefix := addPublicationFlags(f.FlagSet)
	out := f.String("out", "", "output `directory` (required; must not exist or be empty)")
	force := f.Bool("force", false, "replace an --out directory that holds files (the old one is removed once the new one is in place)")
	if err := f.parse(args[1:]); err != nil {
		return err
	}
	if *prefix == "" || *out == "" || f.NArg() != 0 {
		return usagef("snapshot get: usage: latchkey snapshot get --prefix P --out DIR")
	}
	dir := filepath.Clean(*out)
	if err := checkOut(dir, *force); err != nil {
		return failf("snapshot get: %v", err)
	}
	s, err := openStore(ctx, e, *storeFlag)
	if err != nil {
		return err
	}
	defer s.Close()
	snap, err := openPublished(ctx, s, "snapshot get", *prefix)
	if err != nil {
		return err
	}
	if err := writeSnapshot(ctx, snap, dir, *force); err != nil {
		return fmt.Errorf("snapshot get: %w", err)
	}
	fmt.Fprintln(e.stdout, snap.Generation())
	return nil
}

// checkOut refuses an output directory that already holds files unless
// force is set (a generation written over another one's files would be a
// mix of both; with force the old directory is replaced whole), naming
// what it holds.
func checkOut(dir string, force bool) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %q: %w", dir, err)
	case len(ents) > 0 && !force:
		names := make([]string, 0, 3)
		for _, d := range ents[:min(3, len(ents))] {
			names = append(names, d.Name())
		}
		more := ""
		if len(ents) > 3 {
			more = fmt.Sprintf(" and %d more", len(ents)-3)
		}
		return fmt.Errorf("--out %q is not empty (it holds %s%s); give a new or empty directory, or --force to replace it", dir, strings.Join(names, ", "), more)
	}
	return nil
}

// writeSnapshot writes every file of snap into a fresh staging directory
// beside dir, through an os.Root (which refuses any name escaping it), and
// renames it to dir when all are written, checked and synced: the files,
// every directory of the tree (their names), and the parent (the rename),
// so that a power cut after it returns leaves the whole snapshot or none.
func writeSnapshot(ctx context.Context, snap *publish.Snapshot, dir string, force bool) (err error) {
	if err := fsutil.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".latchkey-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(staging)
		}
	}()
	root, err := os.OpenRoot(staging)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, file := range snap.Files() {
		if err := writeSnapshotFile(ctx, snap, root, file.Name); err != nil {
			return err
		}
	}
	if err := os.Chmod(staging, 0o755); err != nil {
		return err
	}
	if err := syncTree(staging); err != nil {
		return err
	}
	old := ""
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if !force {
			return fmt.Errorf("--out %q: %w", dir, err) // not empty any more
		}
		// Set the old tree aside under a name beside it, then remove it
		// once the new one is in place.
		old = staging + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("--out %q: %w", dir, err)
		}
	}
	if err := os.Rename(staging, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return err
	}
	if err := fsutil.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// syncTree fsyncs every directory under root, root included (the files
// were synced as they were written).
func syncTree(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return fsutil.SyncDir(p)
	})
}

// writeSnapshotFile writes one object inside root. The object's bytes are
// checked against the manifest as they are read.
func writeSnapshotFile(ctx context.Context, snap *publish.Snapshot, root *os.Root, name string) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
	}
	rc, err := snap.Open(ctx, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	fh, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	_, err = io.Copy(fh, rc)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	return nil
}

func runGC(ctx context.Context, e *env, args []string) error {
	f := newCmdFlags(e, "gc", "--prefix P [--grace D] [--dry-run]",
		`Delete generations under P that the pointer does not name once their grace
period has passed (superseded and abandoned ones). The grace runs both from
when a generation began and from when it was superseded. It must exceed the
longest reader and the longest publisher (a publisher refuses to commit
after 30 minutes) plus the clock skew between hosts: a shorter grace can
remove a generation while a reader still reads it, or while it is being
published (that publish then fails and publishes nothing).`)
	f.addHelp("  latchkey gc --prefix site --dry-run\n  latchkey gc --prefix site --grace 24h\n", `  0   done (the deleted and kept generations are printed)
  1   a delete or the listing failed
  2   bad command line
`, "")
	storeFlag, prefix := addPublicationFlags(f.FlagSet)
	grace := f.Duration("grace", publish.DefaultGrace, "keep generations younger than this")
	dry := f.Bool("dry-run", false, "list what would be deleted; delete nothing")
	if err := f.parse(args); err != nil {
		return err
	}
	if *prefix == "" || f.NArg() != 0 {
		return usagef("gc: usage: latchkey gc --prefix P [--grace D] [--dry-run]")
	}
	if *grace <= 0 {
		return usagef("gc: --grace must be positive")
	}
	s, err := openStore(ctx, e, *storeFlag)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := publish.GC(ctx, s, *prefix, &publish.GCOptions{Grace: *grace, DryRun: *dry})
	verb := "deleted"
	if *dry {
		verb = "would delete"
	}
	for _, id := range res.Deleted {
		fmt.Fprintf(e.stdout, "%s %s\n", verb, id)
	}
	fmt.Fprintf(e.stdout, "current %s; %s %d generations (%d objects); kept %d within %s\n",
		orNone(res.Current), verb, len(res.Deleted), res.Objects, len(res.Kept), grace.Round(time.Second))
	return err
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
