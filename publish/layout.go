package publish

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/latchkey/latchkey/store"
)

// The errors of this package. Store errors pass through wrapped, matching
// the store's sentinels.
var (
	// ErrSuperseded: another writer committed after this one began. Its
	// generation has been deleted; begin again from the newer state if the
	// work is still wanted.
	ErrSuperseded = errors.New("publish: superseded")
	// ErrFenced: the pointer carries a fencing token newer than this
	// writer's; the writer's lease was lost.
	ErrFenced = errors.New("publish: fenced by a newer token")
	// ErrNothingPublished: the prefix has no pointer yet. It matches
	// store.ErrNotFound too.
	ErrNothingPublished = fmt.Errorf("publish: nothing published: %w", store.ErrNotFound)
	// ErrCorrupt: an object does not match what the manifest says of it.
	ErrCorrupt = errors.New("publish: object does not match manifest")
	// ErrAbandoned: the generation counts as abandoned and was not
	// committed: the writer outlived Options.MaxAge, or some of its
	// objects were removed (by a GC with a grace shorter than the writer's
	// life) before the commit. Nothing was published.
	ErrAbandoned = errors.New("publish: generation abandoned before commit")
	// ErrFinished: the Writer was already committed or aborted; it
	// writes nothing more.
	ErrFinished = errors.New("publish: writer already committed or aborted")
)

const (
	pointerName  = "pointer"
	genDir       = "gen"
	manifestName = "manifest"
	dataDir      = "data"
	idTimeLayout = "20060102T150405.000Z"
)

// layout names the keys of one prefix.
type layout struct{ prefix string }

func newLayout(prefix string) (layout, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if err := store.ValidateKey(prefix); err != nil {
		return layout{}, fmt.Errorf("publish: prefix: %w", err)
	}
	return layout{prefix: prefix}, nil
}

func (l layout) pointer() string             { return l.prefix + "/" + pointerName }
func (l layout) gens() string                { return l.prefix + "/" + genDir + "/" }
func (l layout) gen(id string) string        { return l.gens() + id + "/" }
func (l layout) manifest(id string) string   { return l.gen(id) + manifestName }
func (l layout) data(id, name string) string { return l.gen(id) + dataDir + "/" + name }

// genOf returns the generation id a key under gens() belongs to.
func (l layout) genOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, l.gens())
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, "/")
	return id, ok && id != ""
}

// newID returns a fresh generation id: the UTC time it began (millisecond
// resolution, sortable; GC reads it, so it must not be much earlier than
// the true start) and 64 random bits, so ids are never reused. Every key
// of a generation is also written create-if-absent, so even a colliding id
// could not mix two generations.
func newID(now time.Time) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return now.UTC().Format(idTimeLayout) + "-" + hex.EncodeToString(b[:]), nil
}

// idTime returns the time a generation id began, or false if id is not one
// of ours.
// GenerationTime returns the time a generation began, from its id; ok is
// false when id is not a generation id of this package.
func GenerationTime(id string) (t time.Time, ok bool) { return idTime(id) }

func idTime(id string) (time.Time, bool) {
	ts, rnd, ok := strings.Cut(id, "-")
	if !ok || len(rnd) != 16 {
		return time.Time{}, false
	}
	if _, err := hex.DecodeString(rnd); err != nil {
		return time.Time{}, false
	}
	t, err := time.Parse(idTimeLayout, ts)
	return t, err == nil
}

// ValidateName checks an object name: a relative, clean, slash-separated
// path that is a valid key on its own (store.ValidateKey: no empty, "."
// or ".." segment, no control character). Writer.Put also checks that the
// whole key the name is stored under fits store.MaxKeyLen.
func ValidateName(name string) error {
	if err := store.ValidateKey(name); err != nil {
		return fmt.Errorf("publish: object name: %w", err)
	}
	if path.Clean(name) != name {
		return fmt.Errorf("publish: object name %q is not a clean relative path", name)
	}
	return nil
}
