package publish

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/latchkey/latchkey/cas"
	"github.com/latchkey/latchkey/internal/optcheck"
	"github.com/latchkey/latchkey/store"
)

// Options configure a Writer. A nil *Options and every zero field mean
// the defaults written beside them; negative values are an error.
type Options struct {
	// Token is the writer's fencing token (lease.Lease.Token). Zero means
	// the writer is not fenced. A commit is refused with ErrFenced when the
	// pointer carries a larger token.
	Token uint64
	// Now is the clock; nil means time.Now. Its wall-clock readings go
	// into records for GC and people: the time a generation begins into
	// its id, the manifest's Created, the pointer's Committed. The limits
	// on the writer itself (MaxAge, MaxSwapDelay) are measured between two
	// of its readings, which for time.Now's is the monotonic clock, so a
	// step of the system clock neither cuts nor stretches them. (A Now
	// whose readings carry no monotonic reading measures them on its wall
	// clock.)
	Now func() time.Time
	// MaxAge bounds a Writer's life: Commit refuses, with ErrAbandoned, a
	// generation that began longer ago than this, because GC treats an
	// uncommitted generation older than its grace period as abandoned and
	// may have begun deleting it. It must be shorter than the GC grace
	// less the clock skew between hosts. Zero means DefaultMaxAge.
	MaxAge time.Duration
}

// Defaults used where Options leaves a field zero.
const (
	// DefaultMaxAge is a Writer's longest life when Options.MaxAge is
	// zero: half of DefaultGrace.
	DefaultMaxAge = DefaultGrace / 2
)

// withDefaults returns a copy of o (nil allowed) with zero fields set to
// the defaults, or an error naming the first negative field.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if err := optcheck.NonNegative(optcheck.Named("MaxAge", r.MaxAge)); err != nil {
		return r, fmt.Errorf("publish: begin: %w", err)
	}
	r.MaxAge = cmp.Or(r.MaxAge, DefaultMaxAge)
	if r.Now == nil {
		r.Now = time.Now
	}
	return r, nil
}

// Writer stages one generation and commits it. A Writer is not safe for
// concurrent use.
type Writer struct {
	s       store.Store
	l       layout
	opts    Options
	id      string
	began   time.Time // opts.Now() at Begin, the time in id
	baseOK  bool
	basePt  Pointer // the pointer at Begin (zero if there was none)
	baseRaw []byte  // its bytes: unique per commit (the generation id is never reused)
	files   map[string]File
	keys    []string // every key written, for cleanup
	done    bool
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
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p, _, raw, ok, err := readPointerRaw(ctx, s, l)
	if err != nil {
		return nil, err
	}
	if ok && o.Token != 0 && p.Token > o.Token {
		return nil, fmt.Errorf("%w: pointer token %d, ours %d", ErrFenced, p.Token, o.Token)
	}
	began := o.Now()
	id, err := newID(began)
	if err != nil {
		return nil, err
	}
	return &Writer{s: s, l: l, opts: o, id: id, began: began, baseOK: ok, basePt: p, baseRaw: raw, files: map[string]File{}}, nil
}

// ID returns the generation's id.
func (w *Writer) ID() string { return w.id }

// Put stores the bytes of r as the object name of this generation,
// streaming them when the store can. A name may be written once.
func (w *Writer) Put(ctx context.Context, name string, r io.Reader) error {
	if w.done {
		return ErrFinished
	}
	if err := ValidateName(name); err != nil {
		return err
	}
	if _, dup := w.files[name]; dup {
		return fmt.Errorf("publish: object %q written twice", name)
	}
	key := w.l.data(w.id, name)
	if err := store.ValidateKey(key); err != nil {
		return fmt.Errorf("publish: object name %q is too long for prefix %q: %w", name, w.l.prefix, err)
	}
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(r, h)}
	w.keys = append(w.keys, key)
	v, err := store.PutStream(ctx, w.s, key, cr, store.IfAbsent)
	if err != nil {
		return fmt.Errorf("publish: put %q: %w", name, err)
	}
	w.files[name] = File{Name: name, Size: cr.n, SHA256: hex.EncodeToString(h.Sum(nil)), Key: key, Version: v}
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

// Commit checks that every object of the generation is still there,
// writes the manifest, and then swaps the pointer (within MaxSwapDelay of
// the manifest). If another writer committed
// since Begin, it returns an error matching ErrSuperseded; it never
// retries that. A generation that began longer ago than Options.MaxAge,
// lost objects meanwhile, or would swap the pointer more than MaxSwapDelay
// after its manifest, is refused with ErrAbandoned. On either
// refusal the generation is deleted, unless an earlier attempt of the
// pointer write may have applied (then it may have been visible, and GC
// removes it after the grace period). Transient failures of the pointer
// write are retried with backoff until ctx ends or MaxSwapDelay after the
// manifest, whichever comes first; an unknown outcome is resolved by
// reading the pointer back.
func (w *Writer) Commit(ctx context.Context) (Commit, error) {
	if w.done {
		return Commit{}, ErrFinished
	}
	w.done = true
	if err := w.checkAge(); err != nil {
		return Commit{}, w.fail(ctx, err)
	}
	// The objects are checked before the manifest is written, so that a
	// long check (a listing of many objects) does not come between the
	// manifest's Created, from which GC counts the replaced generation's
	// grace, and the pointer swap.
	if err := w.checkObjects(ctx); err != nil {
		return Commit{}, w.fail(ctx, err)
	}
	if err := w.checkAge(); err != nil { // again, just before the commit
		return Commit{}, w.fail(ctx, err)
	}
	// created keeps its monotonic reading: the swap delay is measured from
	// it on the monotonic clock. The manifest records its wall-clock time
	// (UTC, which drops the monotonic reading) for GC, on other hosts.
	created := w.opts.Now()
	m := w.manifest(created)
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
	token := max(w.opts.Token, w.basePt.Token) // a token never goes backwards
	pb, err := json.Marshal(Pointer{Generation: w.id, Manifest: mkey, ManifestVersion: mv, Token: token, Committed: w.opts.Now().UTC()})
	if err != nil {
		return Commit{}, err
	}
	v, err := w.swapPointer(ctx, pb, created)
	if err != nil {
		return Commit{}, err
	}
	c := Commit{Generation: w.id, Version: v, Files: len(m.Files)}
	for _, f := range m.Files {
		c.Bytes += f.Size
	}
	return c, nil
}

func (w *Writer) manifest(created time.Time) Manifest {
	m := Manifest{Generation: w.id, Base: w.basePt.Generation, Token: w.opts.Token, Created: created.UTC(), Files: []File{}}
	for _, f := range w.files {
		m.Files = append(m.Files, f)
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Name < m.Files[j].Name })
	return m
}

// checkAge refuses a writer older than MaxAge: GC may be deleting it.
// The age is measured between two readings of Options.Now, on the
// monotonic clock when they carry one (time.Now's do).
func (w *Writer) checkAge() error {
	if age := w.opts.Now().Sub(w.began); age > w.opts.MaxAge {
		return fmt.Errorf("%w: generation %s began %s ago, longer than the writer's maximum age %s",
			ErrAbandoned, w.id, age.Round(time.Second), w.opts.MaxAge)
	}
	return nil
}

// checkObjects lists the generation and confirms that every object is
// there at the version written, so that a generation GC has started to
// delete (a GC whose grace is shorter than this writer's life) is never
// committed.
func (w *Writer) checkObjects(ctx context.Context) error {
	want := make(map[string]store.Version, len(w.files))
	for _, f := range w.files {
		want[f.Key] = f.Version
	}
	for it, err := range store.All(ctx, w.s, w.l.gen(w.id)) {
		if err != nil {
			return fmt.Errorf("publish: commit %s: check objects: %w", w.id, err)
		}
		if v, ok := want[it.Key]; ok && (v == "" || v == it.Version) {
			delete(want, it.Key)
		}
	}
	for k := range want {
		return fmt.Errorf("%w: %q of generation %s is gone or replaced", ErrAbandoned, k, w.id)
	}
	return nil
}

// MaxSwapDelay bounds the time from writing a generation's manifest to
// sending a pointer write: Commit refuses with ErrAbandoned past it. GC
// counts the grace of the generation a commit replaces from the manifest's
// Created, so a superseded generation keeps at least its grace less this
// (and less the latency of the last pointer write).
const MaxSwapDelay = time.Minute

// checkSwapDelay refuses a pointer write more than MaxSwapDelay after the
// manifest was created: created is the reading of Options.Now taken then,
// with its monotonic reading (never the manifest's Created, which lost it).
func (w *Writer) checkSwapDelay(created time.Time) error {
	if d := w.opts.Now().Sub(created); d > MaxSwapDelay {
		return fmt.Errorf("%w: generation %s: the pointer swap would come %s after its manifest, more than %s (GC counts the replaced generation's grace from the manifest)",
			ErrAbandoned, w.id, d.Round(time.Second), MaxSwapDelay)
	}
	return nil
}

// definite reports whether a failed write certainly did not apply.
func definite(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrTransient) ||
		errors.Is(err, store.ErrInvalidKey) || errors.Is(err, store.ErrUnsupported)
}

// swapPointer is the commit: one cas.Update of the pointer, whose
// function refuses (ErrSuperseded) as soon as the pointer is not the one
// read at Begin, so a lost race is never retried blindly; transient
// failures are retried with cas's jittered backoff until ctx ends or
// until MaxSwapDelay after the manifest (cas.Options.Timeout: no write,
// not even a resend, is sent later than that). Once a write may have
// applied (an unknown outcome, a context that ended, an unclassified
// error), the generation may have been visible to readers, however
// briefly, so it is never deleted here: only GC may remove it, after the
// grace period.
func (w *Writer) swapPointer(ctx context.Context, pb []byte, created time.Time) (store.Version, error) {
	rs := &recordingStore{Store: w.s}
	res, err := cas.Update(ctx, rs, w.l.pointer(), func(cur []byte, exists bool) (cas.Decision, error) {
		if exists {
			if p, err := ParsePointer(w.l.pointer(), cur); err == nil && p.Generation == w.id {
				return cas.Abort(), nil // an earlier attempt of ours applied
			}
		}
		if exists != w.baseOK || (exists && !bytes.Equal(cur, w.baseRaw)) {
			return cas.Decision{}, fmt.Errorf("%w: generation %s lost the pointer race", ErrSuperseded, w.id)
		}
		if err := w.checkAge(); err != nil {
			return cas.Decision{}, err
		}
		if err := w.checkSwapDelay(created); err != nil {
			return cas.Decision{}, err
		}
		return cas.Set(pb), nil
	}, &cas.Options{Timeout: max(MaxSwapDelay-w.opts.Now().Sub(created), time.Nanosecond),
		BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second, UniqueValues: true})
	if err == nil {
		return res.Entry.Version, nil
	}
	if !rs.mayHaveLanded {
		return "", w.fail(ctx, fmt.Errorf("publish: commit %s: %w", w.id, err))
	}
	// Read back, even when ctx has ended: a write of ours may have won.
	p, pv, ok, rerr := w.readBack(ctx)
	switch {
	case rerr != nil:
		err = fmt.Errorf("%w (and the pointer re-read failed: %v)", err, rerr)
	case ok && p.Generation == w.id:
		return pv, nil
	}
	return "", fmt.Errorf("publish: commit %s: %w (a pointer write may have applied: generation %s is left for GC)", w.id, err, w.id)
}

// recordingStore notes whether a pointer write may have applied without
// our knowing: a failure other than a definite refusal.
type recordingStore struct {
	store.Store
	mayHaveLanded bool
}

func (r *recordingStore) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	v, err := r.Store.Put(ctx, key, value, cond)
	if err != nil && !definite(err) {
		r.mayHaveLanded = true
	}
	return v, err
}

// readBack reads the pointer after a failed write, even when ctx has
// ended (the write may have applied all the same), for a bounded time.
func (w *Writer) readBack(ctx context.Context) (Pointer, store.Version, bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
	defer cancel()
	return readPointer(rctx, w.s, w.l)
}

// readBackTimeout bounds readBack.
const readBackTimeout = 10 * time.Second

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
		return ErrFinished
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
