// Package powerfs is a test file system that loses, on a simulated power
// cut, everything that was not made durable by fsync or fdatasync: the
// adversary of every durability promise (LazyFS and ALICE are the models).
//
// It is a FUSE passthrough (github.com/hanwen/go-fuse/v2) over a private
// copy of a directory. Everything the code under test does reaches the
// backing files at once, so it runs as on any local file system; beside
// that live tree, powerfs keeps the durable image: what a disk would hold
// after a power cut at this moment.
//
//   - File data becomes durable when the file is fsynced (fsync and
//     fdatasync alike, by any handle): the image takes the file's whole
//     content and size at that moment. A file never synced is empty.
//   - Names (directory entries: created, renamed, linked, removed) follow
//     the Model. Strict: a directory's entries become durable only when
//     that directory is fsynced; a rename is atomic, so syncing either of
//     its directories makes the whole rename durable (as every journaling
//     file system does). Journaling (ext4 data=ordered, XFS): every sync
//     of anything makes all names of the tree durable, in order.
//   - A directory created but never named durably is lost with everything
//     in it; a durably named directory keeps only its own durable entries.
//
// The cut happens at a moment the test picks: after the k-th sync call
// (Options.CutAfter, counting every fsync and fdatasync of files and
// directories from the mount on) or when the test calls Cut. From then on
// the image is frozen; the live tree carries on, so the code under test
// runs until the test stops it. An acknowledgement the test received
// before the cut (Cut reports false when read after the acknowledgement
// arrived) must be in the image: Materialize writes the image into a
// directory, where the code restarts and the test checks.
//
// Inode numbers of the backing files name the image's files, so hard
// links are modelled; unlinked files are kept alive in a hidden graveyard
// for the mount's lifetime so that no inode number is reused.
//
// Code that maps files of the mount into memory (bbolt) must run in
// another process than the test that mounts it: a page fault on a FUSE
// mount served by the same process cannot be preempted, and the Go
// runtime's stop-the-world then waits for it forever. File data is copied
// into the image at each sync (only the ranges written since the last one),
// so keep synced files small.
//
// Mounting needs /dev/fuse and root (the mount is made with mount(2)
// directly, so fusermount is not needed); Mount skips the test where that
// is not available, and fails it under CI=true. The mount has no writeback
// cache and no direct I/O: bbolt's mmap reads and pwrites work on it.
//
// After the restart, Survived is the check every power-loss test makes of
// a key (its acknowledged value or the one in flight at the cut), and Show
// renders a value for its failure message.
package powerfs

// Model says which names a sync makes durable.
type Model int

const (
	// Strict: a directory's entries only when that directory is synced.
	Strict Model = iota
	// Journaling: every name of the tree at any sync.
	Journaling
)

func (m Model) String() string { return [...]string{"strict", "journaling"}[m] }

// Options configure Mount.
type Options struct {
	Model Model
	// CutAfter cuts the power right after the CutAfter-th sync call has
	// made its effect durable; 0: only when Cut is called.
	CutAfter int
}
