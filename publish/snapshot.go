package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"time"

	"github.com/latchkey/latchkey/internal/backoff"
	"github.com/latchkey/latchkey/store"
)

// Snapshot is one committed generation, read whole: the pointer is read
// once, and every object read through the Snapshot belongs to that
// generation, whatever is committed meanwhile.
type Snapshot struct {
	s     store.Store
	p     Pointer
	v     store.Version
	files map[string]File
}

// openAttempts bounds Open's re-reads of a pointer whose manifest is gone.
const openAttempts = 3

// openBackoff spaces those re-reads: full jitter under 2ms, then 4ms.
var openBackoff = backoff.Policy{Base: 2 * time.Millisecond, Max: time.Millisecond << (openAttempts - 1)}

// Open reads the current pointer and its manifest. It returns an error
// matching ErrNothingPublished when nothing was ever committed under
// prefix.
func Open(ctx context.Context, s store.Store, prefix string) (*Snapshot, error) {
	l, err := newLayout(prefix)
	if err != nil {
		return nil, err
	}
	var (
		p Pointer
		v store.Version
		m Manifest
	)
	// A manifest can vanish between the two reads only if the pointer
	// moved on and GC removed the generation (a grace shorter than this
	// gap): then the newer pointer is read, a bounded number of times.
	for attempt := 1; ; attempt++ {
		var ok bool
		p, v, ok, err = readPointer(ctx, s, l)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w under %q", ErrNothingPublished, l.prefix)
		}
		m, err = readManifest(ctx, s, p)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrNotFound) || attempt == openAttempts {
			return nil, err
		}
		// A short jittered pause: many readers that lost the same
		// manifest do not all re-read the pointer at once.
		if err := backoff.Sleep(ctx, openBackoff.Delay(attempt)); err != nil {
			return nil, err
		}
	}
	snap := &Snapshot{s: s, p: p, v: v, files: make(map[string]File, len(m.Files))}
	for _, f := range m.Files {
		snap.files[f.Name] = f
	}
	return snap, nil
}

// Generation returns the snapshot's generation id.
func (s *Snapshot) Generation() string { return s.p.Generation }

// Version returns the pointer version the snapshot was read at.
func (s *Snapshot) Version() store.Version { return s.v }

// Token returns the fencing token the generation was committed with (0 if
// none).
func (s *Snapshot) Token() uint64 { return s.p.Token }

// Files lists the generation's objects by name.
func (s *Snapshot) Files() []File {
	out := make([]File, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Open returns a reader of the named object. The reader checks the bytes
// against the manifest's size and SHA-256 and fails with ErrCorrupt at EOF
// when they differ. It returns an error matching store.ErrNotFound when
// the generation has no such object, or when GC removed it (the snapshot
// outlived the grace period).
func (s *Snapshot) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	f, ok := s.files[name]
	if !ok {
		return nil, fmt.Errorf("publish: generation %s has no object %q: %w", s.p.Generation, name, store.ErrNotFound)
	}
	rc, v, err := store.GetStream(ctx, s.s, f.Key)
	if err != nil {
		return nil, fmt.Errorf("publish: object %q of generation %s: %w", name, s.p.Generation, err)
	}
	if f.Version != "" && v != f.Version {
		rc.Close()
		return nil, fmt.Errorf("%w: %q was replaced", ErrCorrupt, name)
	}
	return &checkedReader{rc: rc, f: f, h: sha256.New()}, nil
}

// ReadFile returns the whole named object.
func (s *Snapshot) ReadFile(ctx context.Context, name string) ([]byte, error) {
	rc, err := s.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, rc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type checkedReader struct {
	rc io.ReadCloser
	f  File
	h  hash.Hash
	n  int64
}

func (c *checkedReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	if c.n > c.f.Size {
		return n, fmt.Errorf("%w: %q is longer than %d bytes", ErrCorrupt, c.f.Name, c.f.Size)
	}
	if err == io.EOF && (c.n != c.f.Size || hex.EncodeToString(c.h.Sum(nil)) != c.f.SHA256) {
		return n, fmt.Errorf("%w: %q", ErrCorrupt, c.f.Name)
	}
	return n, err
}

func (c *checkedReader) Close() error { return c.rc.Close() }
