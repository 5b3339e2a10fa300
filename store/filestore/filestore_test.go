package filestore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/store"
)

func open(t testing.TB, dir string, opts *Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	testutil.Opened(t, s, err)
	return s
}

func mustPut(t testing.TB, s *Store, key, value string, cond store.Condition) store.Version {
	t.Helper()
	v, err := s.Put(context.Background(), key, []byte(value), cond)
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return v
}

func wantValue(t testing.TB, s *Store, key, value string) store.Version {
	t.Helper()
	e, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v, want %q", key, err, value)
	}
	if string(e.Value) != value {
		t.Fatalf("Get(%q) = %q, want %q", key, e.Value, value)
	}
	return e.Version
}

// Keys that look like the store's own files, or that no file system could
// name directly, are stored like any other and never touch internal files.
func TestKeysNeverCollideWithInternalFiles(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, nil)
	format, _ := os.ReadFile(filepath.Join(dir, formatFile))
	long := strings.Repeat("x", 300) // one segment over NAME_MAX
	keys := []string{
		formatFile, counterFile, "locks/stripe-00", "locks/counter", "tmp/v-1",
		"txn/j-1-00", "data", "data/_", "_", ".hidden", "A", "a", // case differs
		long, long + "/" + long + "/" + long,
		strings.Repeat("ab/", 341) + "c", // 1024 bytes, 342 segments
		"ünïcødé/キー/🔑", "sp ace/%2F/..x/x..",
	}
	for i, k := range keys {
		if err := store.ValidateKey(k); err != nil {
			t.Fatalf("test key %d invalid: %v", i, err)
		}
		mustPut(t, s, k, "v"+k, store.IfAbsent)
	}
	for _, k := range keys {
		wantValue(t, s, k, "v"+k)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, formatFile)); !bytes.Equal(b, format) {
		t.Errorf("format file changed: %q", b)
	}
	var listed []string
	for it, err := range store.All(context.Background(), s, "") {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, it.Key)
	}
	if len(listed) != len(keys) {
		t.Errorf("listed %d keys, want %d: %q", len(listed), len(keys), listed)
	}
	// Every file the store made is inside dir, and value files only under data/.
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, path)
		if err == nil && !d.IsDir() && len(rel) > 0 {
			top := strings.SplitN(rel, string(filepath.Separator), 2)[0]
			switch top {
			case formatFile, counterFile, locksDir, dataDir, tmpDir, txnDir:
			default:
				t.Errorf("unexpected file %s", rel)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestVersionsNeverReusedAcrossReopenAndStores(t *testing.T) {
	dir := t.TempDir()
	seen := map[store.Version]bool{}
	record := func(v store.Version) {
		t.Helper()
		if seen[v] {
			t.Fatalf("version %q reused", v)
		}
		seen[v] = true
	}
	for round := range 3 {
		s, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		record(mustPut(t, s, "k", "a", store.Unconditional))
		if err := s.Delete(context.Background(), "k", store.Unconditional); err != nil {
			t.Fatal(err)
		}
		record(mustPut(t, s, "k", "b", store.IfAbsent))
		if round == 2 {
			// two stores of one directory at once, both writing
			s2 := open(t, dir, nil)
			for range 40 {
				record(mustPut(t, s, "k", "c", store.Unconditional))
				record(mustPut(t, s2, "k", "d", store.Unconditional))
			}
		}
		s.Close()
	}
	for v := range seen {
		if len(v) > 20 {
			t.Errorf("version %q is not short", v)
		}
	}
}

func TestOpenKeepsLayoutAndRefusesForeignDirectories(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, &Options{Stripes: 4})
	mustPut(t, s, "k", "v", store.Unconditional)
	s.Close()
	s2 := open(t, dir, nil) // defaults do not change an existing store
	if s2.stripes != 4 {
		t.Errorf("reopened with %d stripes, want 4", s2.stripes)
	}
	wantValue(t, s2, "k", "v")

	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Open(foreign, nil); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Open(non-empty foreign dir) = %v, want a refusal", err)
	}
	if _, err := Open(t.TempDir(), &Options{Stripes: MaxStripes + 1}); err == nil {
		t.Error("Open with too many stripes succeeded")
	}
	created := filepath.Join(t.TempDir(), "a", "b")
	open(t, created, nil)
	if _, err := os.Stat(filepath.Join(created, formatFile)); err != nil {
		t.Errorf("Open did not create the directory: %v", err)
	}
}

// A reader keeps the bytes of the version it got even while the key is
// overwritten and deleted.
func TestGetStreamReadsOneVersion(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), nil)
	old := bytes.Repeat([]byte("old."), 1<<16)
	v1, err := store.PutStream(ctx, s, "k", bytes.NewReader(old), store.IfAbsent)
	if err != nil {
		t.Fatal(err)
	}
	r, v, err := s.GetStream(ctx, "k")
	if err != nil || v != v1 {
		t.Fatalf("GetStream = %q, %v; want version %q", v, err, v1)
	}
	defer r.Close()
	head := make([]byte, 10)
	io.ReadFull(r, head)
	mustPut(t, s, "k", "new", store.IfMatch(v1))
	if err := s.Delete(ctx, "k", store.Unconditional); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(append(head, rest...), old) {
		t.Errorf("stream read %d bytes (%v), want the old %d", len(head)+len(rest), err, len(old))
	}
}

// A failed conditional PutStream leaves no staged file behind.
func TestFailedWritesLeaveNothingBehind(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir, nil)
	v := mustPut(t, s, "k", "v", store.IfAbsent)
	if _, err := s.PutStream(ctx, "k", strings.NewReader("x"), store.IfAbsent); !errors.Is(err, store.ErrConflict) {
		t.Errorf("PutStream IfAbsent on existing key: %v", err)
	}
	if _, err := s.PutStream(ctx, "k", strings.NewReader("x"), store.IfMatch("1"+v)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("PutStream stale IfMatch: %v", err)
	}
	_, err := s.Txn(ctx, []store.TxnOp{store.PutOp("a", []byte("1"), store.Unconditional), store.PutOp("k", nil, store.IfAbsent)})
	var te *store.TxnError
	if !errors.Is(err, store.ErrConflict) || !errors.As(err, &te) || te.Index != 1 {
		t.Errorf("Txn = %v, want a conflict on op 1", err)
	}
	failing := io.MultiReader(strings.NewReader("part"), errReader{})
	if _, err := s.PutStream(ctx, "k", failing, store.Unconditional); err == nil {
		t.Error("PutStream of a failing reader succeeded")
	}
	for _, d := range []string{tmpDir, txnDir} {
		if names, _ := readDirNames(filepath.Join(dir, d)); len(names) != 0 {
			t.Errorf("%s/ holds %q after failed writes", d, names)
		}
	}
	wantValue(t, s, "k", "v")
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("reader broke") }

// Two Stores of one directory in one process use separate open file
// descriptions, so flock excludes them as it excludes processes.
func TestTwoStoresOfOneDirectoryExcludeEachOther(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, &Options{Stripes: 1}), open(t, dir, nil)
	const workers, incs = 4, 10
	var wg sync.WaitGroup
	for w := range workers {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for range incs {
				if err := increment(context.Background(), s, "n"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	wantValue(t, a, "n", itoa(workers*incs))
}

func TestErrorsNameBackendOpAndKey(t *testing.T) {
	s := open(t, t.TempDir(), nil)
	_, err := s.Get(context.Background(), "jobs/a")
	var oe *store.OpError
	if !errors.As(err, &oe) || oe.Backend != "filestore" || oe.Op != "get" || oe.Key != "jobs/a" || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get missing = %#v", err)
	}
	if got := err.Error(); got != `filestore: get "jobs/a": not found` {
		t.Errorf("message %q", got)
	}
	if _, err := s.Put(context.Background(), "a//b", nil, store.Unconditional); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Put invalid key = %v", err)
	}
	s.Close()
	if _, err := s.Get(context.Background(), "k"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get after Close = %v", err)
	}
	if err := s.WaitChange(context.Background(), "k", ""); !errors.Is(err, store.ErrClosed) {
		t.Errorf("WaitChange after Close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// An operation waiting for a lock another process holds returns when its
// context ends, and the lock works normally afterwards.
func TestContextEndsWaitForLock(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, &Options{Stripes: 1})
	fd, err := openLockFile(filepath.Join(dir, locksDir, "stripe-00"))
	if err != nil {
		t.Fatal(err)
	}
	defer closeFD(fd)
	if err := flock(fd, true, false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = s.Put(ctx, "k", []byte("v"), store.Unconditional)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Put while locked elsewhere = %v, want DeadlineExceeded", err)
	}
	funlock(fd)
	mustPut(t, s, "k", "v", store.IfAbsent)
	wantValue(t, s, "k", "v")
}

// With inotify, a write by another Store or another process wakes
// WaitChange although its polling period is an hour.
func TestWaitChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir, &Options{PollInterval: time.Hour})
	if !s.Capabilities().Watch {
		s.Close()
		s = open(t, dir, &Options{PollInterval: 5 * time.Millisecond})
		t.Log("no inotify: testing the polling WaitChange")
	}
	other := open(t, dir, nil)
	v := mustPut(t, s, "k", "1", store.IfAbsent)
	if err := s.WaitChange(ctx, "k", ""); err != nil {
		t.Errorf("WaitChange(absent) on an existing key = %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := s.WaitChange(short, "k", v); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitChange with no change = %v, want DeadlineExceeded", err)
	}
	waitFor := func(key string, last store.Version, write func()) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.WaitChange(ctx, key, last) }()
		time.Sleep(10 * time.Millisecond) // let it block; if not, it sees the change at once
		write()
		if err := <-done; err != nil {
			t.Errorf("WaitChange(%q) after a write = %v", key, err)
		}
	}
	waitFor("k", v, func() { mustPut(t, other, "k", "2", store.Unconditional) })
	waitFor("new/key", "", func() { mustPut(t, other, "new/key", "1", store.IfAbsent) })
	waitFor("counter", "", func() { // another process
		if err := child(t, dir, "incr", "1").Run(); err != nil {
			t.Fatal(err)
		}
	})
	v3 := wantValue(t, other, "k", "2")
	waitFor("k", v3, func() {
		if err := other.Delete(ctx, "k", store.IfMatch(v3)); err != nil {
			t.Fatal(err)
		}
	})
}

// Open removes a crashed writer's old temporary files, and only old ones.
func TestOpenRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, nil).Close()
	old, fresh := filepath.Join(dir, tmpDir, "v-old"), filepath.Join(dir, tmpDir, "v-fresh")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * StaleTempAge)
	os.Chtimes(old, long, long)
	open(t, dir, nil)
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temp survived Open: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temp (a live writer's, maybe) removed: %v", err)
	}
}

// A value file that does not parse, or that holds another key, is reported,
// never returned as the key's value.
func TestCorruptFilesAreReported(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), nil)
	mustPut(t, s, "a", "value of a", store.IfAbsent)
	mustPut(t, s, "b", "value of b", store.IfAbsent)
	// b's file now holds a's header and value, as a digest collision would.
	if err := os.Link(s.valuePath("a"), s.valuePath("b")+".x"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.valuePath("b")+".x", s.valuePath("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, ErrCorrupt) || !errors.Is(err, store.ErrTransient) {
		t.Errorf("Get of a file holding another key = %v, want ErrCorrupt", err)
	}
	if err := os.WriteFile(s.valuePath("a"), []byte("LKFS\x01\n\x00\x00 truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get of a truncated file = %v, want ErrCorrupt", err)
	}
	if _, err := s.Put(ctx, "a", []byte("x"), store.IfMatch("1")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("CAS over a corrupt file = %v, want ErrCorrupt", err)
	}
	if _, err := s.List(ctx, "", nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("List over a corrupt file = %v, want ErrCorrupt", err)
	}
	// An unconditional overwrite or delete repairs.
	mustPut(t, s, "a", "repaired", store.Unconditional)
	wantValue(t, s, "a", "repaired")
	if err := s.Delete(ctx, "b", store.Unconditional); err != nil {
		t.Errorf("Delete of a corrupt file = %v", err)
	}
	if _, err := s.List(ctx, "", nil); err != nil {
		t.Errorf("List after the repair = %v", err)
	}
}
