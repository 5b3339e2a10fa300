package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/store"
)

// File is one object of a generation, as its manifest records it.
type File struct {
	Name    string        `json:"name"`
	Size    int64         `json:"size"`
	SHA256  string        `json:"sha256"`
	Key     string        `json:"key"`
	Version store.Version `json:"version"` // the object's version when it was written
}

// manifest is the immutable list of a generation's objects. Files comes
// last: GC reads only the fields before it (manifestHead).
type manifest struct {
	Generation string `json:"generation"`
	// Base is the generation the pointer named when this one began: the
	// one it replaces if it commits. GC keeps a superseded generation for
	// the grace period after its successor's Created, which Commit keeps
	// within maxSwapDelay of the pointer swap.
	Base    string    `json:"base,omitempty"`
	Token   uint64    `json:"token,omitempty"`
	Created time.Time `json:"created"`
	Files   []File    `json:"files"`
}

// pointer is the one object whose CAS commits a generation.
type pointer struct {
	Generation string        `json:"generation"`
	Manifest   string        `json:"manifest"`
	ManVersion store.Version `json:"manifest_version"`
	Token      uint64        `json:"token,omitempty"`
	Committed  time.Time     `json:"committed"`
}

// readPointer returns the pointer and its version, or ok=false when there
// is none.
func readPointer(ctx context.Context, s store.Store, l layout) (p pointer, v store.Version, ok bool, err error) {
	p, v, _, ok, err = readPointerRaw(ctx, s, l)
	return p, v, ok, err
}

// readPointerRaw is readPointer that also returns the pointer's bytes.
func readPointerRaw(ctx context.Context, s store.Store, l layout) (p pointer, v store.Version, raw []byte, ok bool, err error) {
	e, err := s.Get(ctx, l.pointer())
	if errors.Is(err, store.ErrNotFound) {
		return pointer{}, "", nil, false, nil
	}
	if err != nil {
		return pointer{}, "", nil, false, err
	}
	p, err = decodePointer(l, e.Value)
	if err != nil {
		return pointer{}, "", nil, false, err
	}
	return p, e.Version, e.Value, true, nil
}

func decodePointer(l layout, b []byte) (pointer, error) {
	var p pointer
	if err := json.Unmarshal(b, &p); err != nil {
		return pointer{}, fmt.Errorf("publish: pointer %q: %w", l.pointer(), err)
	}
	return p, nil
}

func readManifest(ctx context.Context, s store.Store, p pointer) (manifest, error) {
	e, err := s.Get(ctx, p.Manifest)
	if err != nil {
		return manifest{}, fmt.Errorf("publish: manifest of generation %s: %w", p.Generation, err)
	}
	if p.ManVersion != "" && e.Version != p.ManVersion {
		return manifest{}, fmt.Errorf("%w: manifest %q changed since commit", ErrCorrupt, p.Manifest)
	}
	var m manifest
	if err := json.Unmarshal(e.Value, &m); err != nil {
		return manifest{}, fmt.Errorf("publish: manifest %q: %w", p.Manifest, err)
	}
	return m, nil
}
