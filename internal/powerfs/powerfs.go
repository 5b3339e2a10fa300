//go:build linux

package powerfs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/latchkey/latchkey/internal/testutil"
)

// FS is one mounted power-loss file system.
type FS struct {
	opts    Options
	backing string // the live tree
	grave   string // unlinked files, kept so inode numbers are not reused
	mnt     string
	server  *fuse.Server

	syncs atomic.Int64
	cut   atomic.Bool

	mu      sync.Mutex
	img     image
	renames []rename // not yet durable (Strict)
	graveN  int
	dirty   map[uint64]*dirty // writes since the file's last sync
}

// dirty is what changed in a file since its last sync: the byte ranges
// written, and the smallest size it was truncated to (-1: none).
type dirty struct {
	ranges  [][2]int64
	minSize int64
}

// rename is one rename not yet durable under Strict.
type rename struct {
	ino              uint64
	fromDir, toDir   uint64
	fromName, toName string
}

// image is the durable state, by backing inode number.
type image struct {
	root  uint64
	dirs  map[uint64]map[string]uint64
	files map[uint64][]byte
	links map[uint64]string // symlinks
}

// available reports why powerfs cannot mount here, or nil.
func available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (euid %d)", os.Geteuid())
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("needs /dev/fuse: %w", err)
	}
	return nil
}

// Mount copies src (which may be "" or missing: an empty tree) into a
// private backing directory, takes that copy as durable, and mounts the
// power-loss file system over it. The mount is unmounted at t's cleanup.
func Mount(t testing.TB, src string, opts Options) *FS {
	t.Helper()
	if err := available(); err != nil {
		testutil.Unavailable(t, "powerfs: %v", err)
	}
	base := t.TempDir()
	p := &FS{opts: opts, backing: filepath.Join(base, "root"), grave: filepath.Join(base, "grave"), mnt: t.TempDir()}
	for _, d := range []string{p.backing, p.grave} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if src != "" {
		if err := copyTree(src, p.backing); err != nil {
			t.Fatalf("powerfs: copy %s: %v", src, err)
		}
	}
	if err := p.snapshotAll(); err != nil {
		t.Fatalf("powerfs: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p.backing, &st); err != nil {
		t.Fatal(err)
	}
	lroot := &fs.LoopbackRoot{Path: p.backing, Dev: uint64(st.Dev)}
	lroot.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, p: p}
	}
	rootNode := lroot.NewNode(lroot, nil, "", &st)
	lroot.RootNode = rootNode
	sec := time.Second
	server, err := fs.Mount(p.mnt, rootNode, &fs.Options{
		EntryTimeout: &sec, AttrTimeout: &sec,
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			FsName:            "powerfs",
			Name:              "powerfs",
			DisableXAttrs:     true,
			MaxBackground:     64,
		},
	})
	if err != nil {
		testutil.Unavailable(t, "powerfs: mount: %v", err)
	}
	p.server = server
	t.Cleanup(func() { p.Unmount() })
	return p
}

// Dir is the mount point: the directory the code under test uses.
func (p *FS) Dir() string { return p.mnt }

// Syncs is the number of sync calls so far.
func (p *FS) Syncs() int { return int(p.syncs.Load()) }

// Cut cuts the power now (a no-op if it already is) and reports whether
// it had already been cut before this call.
func (p *FS) Cut() bool { return p.cut.Swap(true) }

// IsCut reports whether the power has been cut. Read it after an
// acknowledgement arrived: false means the acknowledged write must
// survive.
func (p *FS) IsCut() bool { return p.cut.Load() }

// Unmount unmounts the file system (lazily if it is busy). Idempotent.
func (p *FS) Unmount() {
	if p.server == nil {
		return
	}
	if err := p.server.Unmount(); err != nil {
		syscall.Unmount(p.mnt, syscall.MNT_DETACH)
	}
	p.server = nil
}

// Image materializes the durable image into a new directory under
// t.TempDir() and returns it; an error fails t.
func (p *FS) Image(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image")
	if err := p.Materialize(out); err != nil {
		t.Fatalf("powerfs: materialize the image: %v", err)
	}
	return out
}

// Materialize writes the durable image (as of the cut, or of now if there
// was none) into dst, which must not exist or be empty.
func (p *FS) Materialize(dst string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	made := map[uint64]string{}
	seen := map[uint64]bool{}
	var walk func(ino uint64, dir string) error
	walk = func(ino uint64, dir string) error {
		if seen[ino] {
			return nil
		}
		seen[ino] = true
		for name, child := range p.img.dirs[ino] {
			path := filepath.Join(dir, name)
			if prev, ok := made[child]; ok {
				if err := os.Link(prev, path); err != nil {
					return err
				}
				continue
			}
			switch {
			case p.img.dirs[child] != nil:
				if err := os.Mkdir(path, 0o755); err != nil {
					return err
				}
				if err := walk(child, path); err != nil {
					return err
				}
			case p.img.links[child] != "":
				if err := os.Symlink(p.img.links[child], path); err != nil {
					return err
				}
			default:
				if err := os.WriteFile(path, p.img.files[child], 0o644); err != nil {
					return err
				}
				made[child] = path
			}
		}
		return nil
	}
	return walk(p.img.root, dst)
}

// synced records one sync call of the file or directory at the backing
// path (relative to the root): its effect on the image, then the cut if
// this was the CutAfter-th.
func (p *FS) synced(rel string, isDir bool) syscall.Errno {
	n := p.syncs.Add(1)
	if p.cut.Load() {
		return 0
	}
	p.mu.Lock()
	var err error
	switch {
	case p.opts.Model == Journaling:
		if !isDir {
			err = p.snapshotFile(filepath.Join(p.backing, rel))
		}
		if err == nil {
			err = p.snapshotAll()
		}
	case isDir:
		err = p.snapshotDir(rel)
	default:
		err = p.snapshotFile(filepath.Join(p.backing, rel))
	}
	p.mu.Unlock()
	if p.opts.CutAfter > 0 && n == int64(p.opts.CutAfter) {
		p.cut.Store(true)
	}
	if err != nil {
		return fs.ToErrno(err)
	}
	return 0
}

func inoOf(path string) (uint64, os.FileMode, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, 0, err
	}
	return fi.Sys().(*syscall.Stat_t).Ino, fi.Mode(), nil
}

// snapshotFile makes a file's current content durable: the ranges
// written since its last sync, or all of it if the image has none. The
// caller holds mu.
func (p *FS) snapshotFile(path string) error {
	if p.cut.Load() {
		return nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	ino, size := fi.Sys().(*syscall.Stat_t).Ino, fi.Size()
	d, known := p.dirty[ino], p.img.files[ino] != nil
	delete(p.dirty, ino)
	if !known || d == nil {
		if known && d == nil && int64(len(p.img.files[ino])) == size {
			return nil // nothing written since the last sync
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		p.img.files[ino] = b
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data := p.img.files[ino]
	if d.minSize >= 0 && d.minSize < int64(len(data)) {
		data = data[:d.minSize]
	}
	if int64(len(data)) < size {
		data = append(data, make([]byte, size-int64(len(data)))...)
	}
	data = data[:size]
	for _, r := range d.ranges {
		from, to := min(r[0], size), min(r[1], size)
		if from < to {
			if _, err := f.ReadAt(data[from:to], from); err != nil {
				return err
			}
		}
	}
	p.img.files[ino] = data
	return nil
}

// wrote records that ino's bytes [off, off+n) changed.
func (p *FS) wrote(ino uint64, off, n int64) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.dirtyLocked(ino)
	if k := len(d.ranges); k > 0 && d.ranges[k-1][1] >= off && d.ranges[k-1][0] <= off {
		d.ranges[k-1][1] = max(d.ranges[k-1][1], off+n)
		return
	}
	d.ranges = append(d.ranges, [2]int64{off, off + n})
}

// dirtyLocked returns ino's record of unsynced changes, made empty when it
// has none. p.mu is held.
func (p *FS) dirtyLocked(ino uint64) *dirty {
	d := p.dirty[ino]
	if d == nil {
		d = &dirty{minSize: -1}
		p.dirty[ino] = d
	}
	return d
}

// truncated records that ino was cut to size.
func (p *FS) truncated(ino uint64, size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.dirtyLocked(ino)
	if d.minSize < 0 || size < d.minSize {
		d.minSize = size
	}
}

// snapshotDir makes the current entries of the directory at rel durable,
// and the renames into or out of it. The caller holds mu.
func (p *FS) snapshotDir(rel string) error {
	path := filepath.Join(p.backing, rel)
	ino, _, err := inoOf(path)
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	names := make(map[string]uint64, len(ents))
	for _, ent := range ents {
		child := filepath.Join(path, ent.Name())
		cino, mode, err := inoOf(child)
		if err != nil {
			continue // gone meanwhile: as if removed first
		}
		names[ent.Name()] = cino
		p.adopt(cino, mode, child)
	}
	p.img.dirs[ino] = names
	kept := p.renames[:0]
	for _, r := range p.renames {
		switch ino {
		case r.toDir:
			if m := p.img.dirs[r.fromDir]; m != nil && r.fromDir != ino && m[r.fromName] == r.ino {
				delete(m, r.fromName)
			}
		case r.fromDir:
			if m := p.img.dirs[r.toDir]; m != nil && r.toDir != ino {
				m[r.toName] = r.ino
			}
		default:
			kept = append(kept, r)
		}
	}
	p.renames = kept
	return nil
}

// adopt makes sure a newly named inode has an image: an empty directory,
// an empty file (its data is durable only once it is synced), or its
// symlink target.
func (p *FS) adopt(ino uint64, mode os.FileMode, path string) {
	switch {
	case mode.IsDir():
		if p.img.dirs[ino] == nil {
			p.img.dirs[ino] = map[string]uint64{}
		}
	case mode&os.ModeSymlink != 0:
		if t, err := os.Readlink(path); err == nil {
			p.img.links[ino] = t
		}
	default:
		if _, ok := p.img.files[ino]; !ok {
			p.img.files[ino] = nil
		}
	}
}

// snapshotAll makes the whole tree's names durable (Journaling, and the
// starting image), with the data of files the image has never seen.
// Other files keep their synced data. The caller holds mu (or is Mount).
func (p *FS) snapshotAll() error {
	first := p.img.dirs == nil
	if first {
		p.img = image{dirs: map[uint64]map[string]uint64{}, files: map[uint64][]byte{}, links: map[uint64]string{}}
		p.dirty = map[uint64]*dirty{}
		ino, _, err := inoOf(p.backing)
		if err != nil {
			return err
		}
		p.img.root = ino
	}
	p.renames = nil
	return filepath.WalkDir(p.backing, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // removed meanwhile
		}
		if !d.IsDir() {
			if first {
				return p.snapshotFile(path)
			}
			return nil
		}
		rel, _ := filepath.Rel(p.backing, path)
		return p.snapshotDir(rel)
	})
}

// bury keeps the file at path alive under the graveyard before its last
// name may go, so that its inode number is not reused while mounted.
func (p *FS) bury(path string) {
	fi, err := os.Lstat(path)
	if err != nil || fi.IsDir() {
		return
	}
	p.mu.Lock()
	p.graveN++
	n := p.graveN
	p.mu.Unlock()
	_ = os.Link(path, filepath.Join(p.grave, fmt.Sprint(n)))
}

// copyTree copies the regular files, directories and symlinks of src
// into dst (hard links become copies).
func copyTree(src, dst string) error {
	if _, err := os.Stat(src); os.IsNotExist(err) {
		return nil
	}
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		switch {
		case rel == ".":
			return nil
		case d.IsDir():
			return os.Mkdir(out, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			t, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(t, out)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, in); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
}

// node is a loopback node whose syncs, renames and removals the model
// sees.
type node struct {
	fs.LoopbackNode
	p *FS
}

func (n *node) rel() string { return n.Path(n.Root()) }

func (n *node) backingPath(name string) string {
	return filepath.Join(n.p.backing, n.rel(), name)
}

var (
	_ fs.NodeOpener          = (*node)(nil)
	_ fs.NodeCreater         = (*node)(nil)
	_ fs.NodeOpendirHandler  = (*node)(nil)
	_ fs.NodeRenamer         = (*node)(nil)
	_ fs.NodeUnlinker        = (*node)(nil)
	_ fs.NodeRmdirer         = (*node)(nil)
	_ fs.NodeFsyncer         = (*node)(nil)
	_ fs.FileFsyncer         = (*file)(nil)
	_ fs.FileFsyncdirer      = (*dirHandle)(nil)
	_ fs.FilePassthroughFder = (*file)(nil)
)

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, ff, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{LoopbackFile: fh.(*fs.LoopbackFile), n: n}, ff, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, ff, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, &file{LoopbackFile: fh.(*fs.LoopbackFile), n: in.Operations().(*node)}, ff, 0
}

// Fsync serves a sync that reaches the node without a file handle.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	return n.p.synced(n.rel(), n.IsDir())
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	path := filepath.Join(n.p.backing, n.rel())
	return &dirHandle{n: n, creator: func() (fs.DirStream, syscall.Errno) { return fs.NewLoopbackDirStream(path) }}, 0, 0
}

// Rmdir moves an empty directory to the graveyard instead of freeing its
// inode number.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	path := n.backingPath(name)
	ents, err := os.ReadDir(path)
	if err != nil {
		return fs.ToErrno(err)
	}
	if len(ents) > 0 {
		return syscall.ENOTEMPTY
	}
	n.p.mu.Lock()
	n.p.graveN++
	grave := filepath.Join(n.p.grave, fmt.Sprint(n.p.graveN))
	n.p.mu.Unlock()
	if err := os.Rename(path, grave); err != nil {
		return fs.ToErrno(err)
	}
	return 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	n.p.bury(n.backingPath(name))
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	from, to := n.backingPath(name), np.backingPath(newName)
	n.p.bury(to)
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		return errno
	}
	ino, _, err1 := inoOf(to)
	fromDir, _, err2 := inoOf(filepath.Dir(from))
	toDir, _, err3 := inoOf(filepath.Dir(to))
	if err1 == nil && err2 == nil && err3 == nil && fromDir != toDir {
		n.p.mu.Lock()
		n.p.renames = append(n.p.renames, rename{ino: ino, fromDir: fromDir, toDir: toDir, fromName: name, toName: newName})
		n.p.mu.Unlock()
	}
	return 0
}

// file is an open regular file.
type file struct {
	*fs.LoopbackFile
	n *node
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, errno := f.LoopbackFile.Write(ctx, data, off)
	f.n.p.wrote(f.n.StableAttr().Ino, off, int64(n))
	return n, errno
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	n, errno := f.LoopbackFile.Writev(ctx, data, off)
	f.n.p.wrote(f.n.StableAttr().Ino, off, int64(n))
	return n, errno
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		f.n.p.truncated(f.n.StableAttr().Ino, int64(sz))
	}
	return f.LoopbackFile.Setattr(ctx, in, out)
}

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	errno := f.LoopbackFile.Allocate(ctx, off, size, mode)
	f.n.p.wrote(f.n.StableAttr().Ino, int64(off), int64(size))
	return errno
}

// Setattr without a handle (truncate(2) by path).
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		n.p.truncated(n.StableAttr().Ino, int64(sz))
	}
	if f, ok := fh.(*file); ok {
		fh = f.LoopbackFile
	}
	return n.LoopbackNode.Setattr(ctx, fh, in, out)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return f.n.p.synced(f.n.rel(), false)
}

// PassthroughFd keeps every read and write going through powerfs.
func (f *file) PassthroughFd() (int, bool) { return -1, false }

// dirHandle is an open directory.
type dirHandle struct {
	n       *node
	creator func() (fs.DirStream, syscall.Errno)
	ds      fs.DirStream
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.n.p.synced(d.n.rel(), true)
}

func (d *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {
	if d.ds != nil {
		d.ds.Close()
	}
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if d.ds == nil {
		var errno syscall.Errno
		if d.ds, errno = d.creator(); errno != 0 {
			return nil, errno
		}
	}
	if !d.ds.HasNext() {
		return nil, 0
	}
	e, errno := d.ds.Next()
	return &e, errno
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if d.ds != nil {
		d.ds.Close()
	}
	var errno syscall.Errno
	d.ds, errno = d.creator()
	if errno != 0 {
		return errno
	}
	if off == 0 {
		return 0
	}
	if sd, ok := d.ds.(fs.FileSeekdirer); ok {
		return sd.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}
