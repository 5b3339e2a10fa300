package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/latchkey/latchkey/store"
)

// Options configure a Writer. The zero value (or nil) is valid.
type Options struct {
	// Token is the writer's fencing token (lease.Lease.Token). Zero means
	// the writer is not fenced. A commit is refused with ErrFenced when the
	// pointer carries a larger token.
	Token uint64
	// Now is the wall clock; nil means time.Now. The time a generation
	// begins is embedded in its id, for GC.
	Now func() time.Time
	// MaxTransient bounds retries of the pointer write after
	// store.ErrTransient or an unknown outcome known not to have applied;
	// 0 means 5.
	MaxTransient int
}

func (o *Options) orDefault() Options {
	var d Options
	if o != nil {
		d = *o
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.MaxTransient <= 0 {
		d.MaxTransient = 5
	}
	return d
}

// Writer stages one generation and commits it. A Writer is not safe for
// concurrent use.
type Writer struct {
	s      store.Store
	l      layout
	opts   Options
	id     string
	base   store.Version // pointer version at Begin; "" if there was none
	baseOK bool
	files  map[string]File
	keys   []string // every key written, for cleanup
	done   bool
}

// Commit describes a committed generation.
type Commit struct {
	Generation string
	Version    store.Version // the pointer's new version
	Files      int
	Bytes      int64
}

// Begin starts a generation under prefix. It reads the pointer, whose
// version the commit will require, and refuses at once when the pointer's
// fencing token is newer than opts.Token.
func Begin(ctx context.Context, s store.Store, prefix string, opts *Options) (*Writer, error) {
	caps := s.Capabilities()
	if !caps.CreateIfAbsent || !caps.CompareAndSwap {
		return nil, fmt.Errorf("publish: store lacks create-if-absent or compare-and-swap: %w", store.ErrUnsupported)
	}
	l, err := newLayout(prefix)
	if err != nil {
		return nil, err
	}
	o := opts.orDefault()
	p, v, ok, err := readPointer(ctx, s, l)
	if err != nil {
		return nil, err
	}
	if ok && o.Token != 0 && p.Token > o.Token {
		return nil, fmt.Errorf("%w: pointer token %d, ours %d", ErrFenced, p.Token, o.Token)
	}
	id, err := newID(o.Now())
	if err != nil {
		return nil, err
	}
	return &Writer{s: s, l: l, opts: o, id: id, base: v, baseOK: ok, files: map[string]File{}}, nil
}

// ID returns the generation's id.
func (w *Writer) ID() string { return w.id }

// Put stores the bytes of r as the object name of this generation,
// streaming them when the store can. A name may be written once.
func (w *Writer) Put(ctx context.Context, name string, r io.Reader) error {
	if w.done {
		return errors.New("publish: writer already committed or aborted")
	}
	if err := validName(name); err != nil {
		return err
	}
	if _, dup := w.files[name]; dup {
		return fmt.Errorf("publish: object %q written twice", name)
	}
	key := w.l.data(w.id, name)
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(r, h)}
	w.keys = append(w.keys, key)
	v, err := store.PutStream(ctx, w.s, key, cr, store.IfAbsent)
	if err != nil {
		return fmt.Errorf("publish: put %q: %w", name, err)
	}
	w.files[name] = File{Name: name, Size: cr.n, SHA256: hex.EncodeToString(h.Sum(nil)), Key: key, Ver: v}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Commit writes the manifest and then the pointer. If another writer
// committed since Begin, it deletes this generation and returns an error
// matching ErrSuperseded; it never retries that. Transient failures of the
// pointer write are retried a bounded number of times; an unknown outcome
// is resolved by reading the pointer back.
func (w *Writer) Commit(ctx context.Context) (Commit, error) {
	if w.done {
		return Commit{}, errors.New("publish: writer already committed or aborted")
	}
	w.done = true
	m := w.manifest()
	mb, err := json.Marshal(m)
	if err != nil {
		return Commit{}, err
	}
	mkey := w.l.manifest(w.id)
	w.keys = append(w.keys, mkey)
	mv, err := w.s.Put(ctx, mkey, mb, store.IfAbsent)
	if err != nil {
		return Commit{}, w.fail(ctx, fmt.Errorf("publish: manifest: %w", err))
	}
	pb, err := json.Marshal(pointer{Generation: w.id, Manifest: mkey, ManVersion: mv, Token: w.opts.Token, Committed: w.opts.Now().UTC()})
	if err != nil {
		return Commit{}, err
	}
	v, err := w.swapPointer(ctx, pb)
	if err != nil {
		return Commit{}, err
	}
	c := Commit{Generation: w.id, Version: v, Files: len(m.Files)}
	for _, f := range m.Files {
		c.Bytes += f.Size
	}
	return c, nil
}

func (w *Writer) manifest() manifest {
	m := manifest{Generation: w.id, Token: w.opts.Token, Created: w.opts.Now().UTC()}
	for _, f := range w.files {
		m.Files = append(m.Files, f)
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Name < m.Files[j].Name })
	return m
}

// swapPointer is the commit: one CAS of the pointer.
func (w *Writer) swapPointer(ctx context.Context, pb []byte) (store.Version, error) {
	cond := store.IfAbsent
	if w.baseOK {
		cond = store.IfMatch(w.base)
	}
	for attempt := 1; ; attempt++ {
		v, err := w.s.Put(ctx, w.l.pointer(), pb, cond)
		switch {
		case err == nil:
			return v, nil
		case errors.Is(err, store.ErrConflict):
			// A retried write can be refused although an earlier attempt
			// won: check before discarding.
			if p, pv, ok, rerr := readPointer(ctx, w.s, w.l); rerr == nil && ok && p.Generation == w.id {
				return pv, nil
			}
			return "", w.fail(ctx, fmt.Errorf("%w: generation %s lost the pointer race", ErrSuperseded, w.id))
		case errors.Is(err, store.ErrUnknownOutcome):
			p, pv, ok, rerr := readPointer(ctx, w.s, w.l)
			switch {
			case rerr != nil:
				return "", fmt.Errorf("publish: commit %s: %w (and re-read failed: %v)", w.id, err, rerr)
			case ok && p.Generation == w.id:
				return pv, nil // our write landed
			case ok != w.baseOK || pv != w.base:
				// Someone else's write is there now. Ours may have landed
				// first and been read; leave the generation to GC.
				return "", fmt.Errorf("publish: commit %s: %w; the pointer has moved on since", w.id, err)
			}
			// The pointer is as we began: our write did not land.
		case !errors.Is(err, store.ErrTransient):
			return "", w.fail(ctx, fmt.Errorf("publish: commit %s: %w", w.id, err))
		}
		if attempt >= w.opts.MaxTransient {
			return "", w.fail(ctx, fmt.Errorf("publish: commit %s: gave up after %d attempts: %w", w.id, attempt, err))
		}
		if err := sleep(ctx, attempt); err != nil {
			return "", w.fail(ctx, err)
		}
	}
}

// sleep waits a full-jitter exponential backoff for the attempt.
func sleep(ctx context.Context, attempt int) error {
	d := min(10*time.Millisecond<<attempt, time.Second)
	t := time.NewTimer(rand.N(d) + time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fail deletes what this writer wrote and returns err.
func (w *Writer) fail(ctx context.Context, err error) error {
	if cerr := w.cleanup(context.WithoutCancel(ctx)); cerr != nil {
		return fmt.Errorf("%w (cleanup left objects for GC: %v)", err, cerr)
	}
	return err
}

// Abort deletes this generation's objects. Nothing becomes visible.
func (w *Writer) Abort(ctx context.Context) error {
	if w.done {
		return errors.New("publish: writer already committed or aborted")
	}
	w.done = true
	return w.cleanup(ctx)
}

func (w *Writer) cleanup(ctx context.Context) error {
	var errs []error
	for _, k := range w.keys {
		if err := w.s.Delete(ctx, k, store.Unconditional); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
