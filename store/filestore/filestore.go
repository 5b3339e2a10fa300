package filestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/fsutil"
	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/store"
)

const backend = "filestore"

// Limits and defaults.
const (
	// DefaultStripes is the number of lock stripes of a new directory.
	DefaultStripes = 64
	// MaxStripes is the most lock stripes a directory may have.
	MaxStripes = 64
	// DefaultPageSize is the page size of List when ListOptions.Limit is 0.
	DefaultPageSize = 1000
	// DefaultPollInterval is how often WaitChange looks at the key when no
	// write of this process wakes it first.
	DefaultPollInterval = 100 * time.Millisecond
	// StaleTempAge is how old an unreferenced temporary file must be before
	// Open removes it (a crashed writer's leftovers).
	StaleTempAge = time.Hour
)

// Options configure Open. The zero value (or nil) means the defaults: a
// zero field means its Default… constant, and a negative one is an error.
type Options struct {
	// Stripes is the number of lock stripes (1 to MaxStripes) used when
	// Open creates a new store; 0 means DefaultStripes. An existing store
	// keeps the count it was created with, since every process must agree
	// on it. One stripe is a single global lock.
	Stripes int
	// PollInterval is WaitChange's polling period, jittered by ±50%;
	// 0 means DefaultPollInterval.
	PollInterval time.Duration
}

// Store is a store.Store kept in a local directory. It is safe for
// concurrent use by goroutines and by processes that open the same
// directory.
type Store struct {
	dir     string
	stripes int
	poll    time.Duration
	noSync  bool // tests and benchmarks only: skip every fsync

	mu       sync.RWMutex // guards closed; held shared only to join inflight
	closed   bool
	inflight sync.WaitGroup // operations and lock cleanups in progress

	locks     []stripeLock // one per stripe, then the counter lock
	inotifyMu sync.Mutex
	inotify   *notifier // made by the first WaitChange; nil: not yet, or none available
	buckets   sync.Map  // bucket names known to exist (and be durable)
	alloc     allocator

	changedMu sync.Mutex
	changed   chan struct{} // closed and replaced on every write of this Store
}

var _ interface {
	store.Store
	store.Transactor
	store.Streamer
	store.Watcher
} = (*Store)(nil)

// Open opens the store kept in dir, creating dir and the store's layout if
// needed, and finishes any transaction a crashed process left committed but
// unapplied. It refuses a non-empty directory that is not a store. A nil
// opts means the defaults.
func Open(dir string, opts *Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("filestore: open %s: %w", dir, err)
	}
	if !supported {
		return nil, store.NewOpError(backend, "open", dir, store.ErrUnsupported, errNoFlock)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: open %s: %w", dir, err)
	}
	s := &Store{dir: abs, poll: o.PollInterval, changed: make(chan struct{})}
	if s.stripes, err = s.initLayout(o.Stripes); err != nil {
		return nil, fmt.Errorf("filestore: open %s: %w", dir, err)
	}
	if err := s.openLocks(); err != nil {
		s.closeLocks()
		return nil, fmt.Errorf("filestore: open %s: %w", dir, err)
	}
	if err := s.recoverAll(context.Background()); err != nil {
		s.closeLocks()
		return nil, fmt.Errorf("filestore: open %s: %w", dir, err)
	}
	s.cleanTemps()
	return s, nil
}

// withDefaults returns a copy of o (nil: every default) with zero fields
// set to their defaults, or an error naming the first negative field or
// a stripe count above MaxStripes.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if err := optcheck.NonNegative(optcheck.Named("Stripes", r.Stripes), optcheck.Named("PollInterval", r.PollInterval)); err != nil {
		return r, err
	}
	r.Stripes = cmp.Or(r.Stripes, DefaultStripes)
	r.PollInterval = cmp.Or(r.PollInterval, DefaultPollInterval)
	if r.Stripes > MaxStripes {
		return r, fmt.Errorf("%d stripes, want 1 to %d", r.Stripes, MaxStripes)
	}
	return r, nil
}

// Dir returns the store's directory (absolute).
func (s *Store) Dir() string { return s.dir }

// initLayout creates or checks the directory layout under an exclusive
// flock of the directory itself, and returns the store's stripe count.
func (s *Store) initLayout(stripes int) (int, error) {
	// The directories made on the way (the CLI's default store's
	// parents) are durable before anything in the store is.
	if err := fsutil.MkdirAll(s.dir, 0o755); err != nil {
		return 0, err
	}
	d, err := os.Open(s.dir)
	if err != nil {
		return 0, err
	}
	defer d.Close() // also releases the flock
	if err := flock(int(d.Fd()), true, false); err != nil {
		return 0, err
	}

	b, err := os.ReadFile(filepath.Join(s.dir, formatFile))
	switch {
	case err == nil:
		if stripes, err = parseFormat(b); err != nil {
			return 0, err
		}
	case errors.Is(err, os.ErrNotExist):
		if err := s.createFormat(stripes); err != nil {
			return 0, err
		}
	default:
		return 0, err
	}
	for _, d := range []string{locksDir, dataDir, tmpDir, txnDir} {
		if err := os.Mkdir(filepath.Join(s.dir, d), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return 0, err
		}
	}
	return stripes, s.syncDir(s.dir)
}

// createFormat writes the format marker into an empty directory.
func (s *Store) createFormat(stripes int) error {
	names, err := readDirNames(s.dir)
	if err != nil {
		return err
	}
	names = slices.DeleteFunc(names, func(n string) bool {
		return strings.HasPrefix(n, "."+formatFile+".tmp-") // an earlier Open's crash
	})
	if len(names) > 0 {
		return fmt.Errorf("directory is not empty and not a filestore (no %s file)", formatFile)
	}
	content := fmt.Sprintf("latchkey-filestore %d\nstripes %d\n", formatVersion, stripes)
	return s.writeFileAtomic(s.dir, formatFile, []byte(content))
}

func parseFormat(b []byte) (int, error) {
	var version, stripes int
	_, err := fmt.Sscanf(string(b), "latchkey-filestore %d\nstripes %d\n", &version, &stripes)
	if err != nil || version != formatVersion || stripes < 1 || stripes > MaxStripes {
		return 0, fmt.Errorf("%w: %s: unsupported format %q", ErrCorrupt, formatFile, b)
	}
	return stripes, nil
}

// writeFileAtomic writes dir/name by a fsynced temporary file renamed into
// place, then syncs dir.
func (s *Store) writeFileAtomic(dir, name string, content []byte) error {
	f, err := createTemp(dir, "."+name+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := hook("write"); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := s.syncFile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := hook("rename"); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	return s.syncDir(dir)
}

func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// cleanTemps removes temporary files older than StaleTempAge that no
// committed journal names and no live writer holds: leftovers of crashed
// writers. A writer holds a shared flock(2) on each value it stages until
// it is published or given up (see stage), so a writer paused for longer
// than StaleTempAge keeps its files. The candidates are locked first and
// the journals read after, so a journal written by a writer that died in
// between still protects its files. Errors are ignored; a leftover costs
// only disk space.
func (s *Store) cleanTemps() {
	var locked []*os.File
	defer func() {
		for _, f := range locked {
			f.Close()
		}
	}()
	names, _ := readDirNames(filepath.Join(s.dir, tmpDir))
	for _, n := range names {
		path := filepath.Join(s.dir, tmpDir, n)
		if !isStale(path) {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if flock(int(f.Fd()), true, true) != nil { // a live writer's
			f.Close()
			continue
		}
		locked = append(locked, f)
	}
	keep := make(map[string]bool)
	names, _ = readDirNames(filepath.Join(s.dir, txnDir))
	for _, n := range names {
		if !strings.HasPrefix(n, journalPrefix) {
			if path := filepath.Join(s.dir, txnDir, n); isStale(path) {
				os.Remove(path)
			}
			continue
		}
		if j, err := s.readJournal(n); err == nil {
			for _, op := range j.Ops {
				keep[op.Staged] = true
			}
		}
	}
	for _, f := range locked {
		if !keep[filepath.Base(f.Name())] {
			os.Remove(f.Name())
		}
	}
}

func isStale(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && time.Since(fi.ModTime()) > StaleTempAge
}

// Capabilities implements store.Store: every conditional operation and
// transactions are atomic across processes; values stream; Watch is true
// where WaitChange waits on inotify(7) (Linux) and false where it polls.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true,
		Transactions: true, Watch: inotifySupported, Streaming: true, UniqueVersions: true}
}

// begin starts an operation: it fails as guard (store.Guard, or
// store.GuardPrefix for a listing) says — closed store, done ctx, bad key —
// and otherwise registers the operation so Close waits for it. The caller
// calls s.inflight.Done when begin returns nil.
func (s *Store) begin(ctx context.Context, guard func(ctx context.Context, closed bool, backend, op, key string) error, op, key string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := guard(ctx, s.closed, backend, op, key); err != nil {
		return err
	}
	s.inflight.Add(1)
	return nil
}

// Close implements store.Store. It waits for operations in progress;
// later calls fail with store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.notify()
	s.inflight.Wait()
	s.inotifyMu.Lock()
	if s.inotify != nil {
		s.inotify.close()
	}
	s.inotifyMu.Unlock()
	return s.closeLocks()
}

// notify wakes this process's WaitChange calls.
func (s *Store) notify() {
	s.changedMu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.changedMu.Unlock()
}

func (s *Store) changes() <-chan struct{} {
	s.changedMu.Lock()
	defer s.changedMu.Unlock()
	return s.changed
}

// opErr wraps err for op on key. Context errors become ErrUnknownOutcome
// (or stay as they are when already an *OpError), lock and I/O failures
// become kind.
func opErr(op, key string, kind, err error) error {
	var oe *store.OpError
	switch {
	case errors.As(err, &oe):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return store.NewOpError(backend, op, key, store.ErrUnknownOutcome, err)
	}
	return store.NewOpError(backend, op, key, kind, err)
}

func formatVersionString(v uint64) store.Version { return store.Version(strconv.FormatUint(v, 10)) }

// sortedStripes returns the distinct stripes of keys in ascending order:
// the order in which every locker takes them, so that lockers never
// deadlock.
func (s *Store) sortedStripes(keys ...string) []int {
	out := make([]int, 0, len(keys))
	for _, k := range keys {
		out = append(out, hashKey(k).stripe(s.stripes))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
