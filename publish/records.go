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

// Manifest is the immutable list of a generation's objects, stored at
// P/gen/ID/manifest. Files comes last: GC reads only the fields before it
// (manifestHead).
type Manifest struct {
	// Generation is the generation's id.
	Generation string `json:"generation"`
	// Base is the generation the pointer named when this one began: the
	// one it replaces if it commits. GC keeps a superseded generation for
	// the grace period after its successor's Created, which Commit keeps
	// within maxSwapDelay of the pointer swap.
	Base string `json:"base,omitempty"`
	// Token is the writer's fencing token (Options.Token), 0 if unfenced.
	Token uint64 `json:"token,omitempty"`
	// Created is when the manifest was written (the writer's clock).
	Created time.Time `json:"created"`
	Files   []File    `json:"files"`
}

// Pointer is the one object whose CAS commits a generation, stored at
// P/pointer: it names the current generation and its manifest.
type Pointer struct {
	Generation string `json:"generation"`
	// Manifest is the key of the generation's manifest, and
	// ManifestVersion its version when the pointer was written: a reader
	// refuses a manifest that changed since (ErrCorrupt).
	Manifest        string        `json:"manifest"`
	ManifestVersion store.Version `json:"manifest_version"`
	// Token is the committing writer's fencing token, 0 if unfenced.
	Token uint64 `json:"token,omitempty"`
	// Committed is when the pointer was written (the writer's clock).
	Committed time.Time `json:"committed"`
}

// ParsePointer decodes the pointer stored at key (b is its value) as this
// package reads it. It returns an error when b is not a pointer record:
// not JSON, or naming no generation or manifest. Tools that read records
// themselves (the server's console) use it, so that every reader agrees
// on what a pointer says.
func ParsePointer(key string, b []byte) (Pointer, error) {
	var p Pointer
	if err := json.Unmarshal(b, &p); err != nil {
		return Pointer{}, fmt.Errorf("publish: pointer %q: %w", key, err)
	}
	if p.Generation == "" || p.Manifest == "" {
		return Pointer{}, fmt.Errorf("publish: pointer %q: not a pointer record: no generation or manifest", key)
	}
	return p, nil
}

// ParseManifest decodes the manifest stored at key (b is its value) as
// this package reads it. Like ParsePointer, it is for tools that read
// records themselves.
func ParseManifest(key string, b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("publish: manifest %q: %w", key, err)
	}
	return m, nil
}

// readPointer returns the pointer and its version, or ok=false when there
// is none.
func readPointer(ctx context.Context, s store.Store, l layout) (p Pointer, v store.Version, ok bool, err error) {
	p, v, _, ok, err = readPointerRaw(ctx, s, l)
	return p, v, ok, err
}

// readPointerRaw is readPointer that also returns the pointer's bytes.
func readPointerRaw(ctx context.Context, s store.Store, l layout) (p Pointer, v store.Version, raw []byte, ok bool, err error) {
	e, err := s.Get(ctx, l.pointer())
	if errors.Is(err, store.ErrNotFound) {
		return Pointer{}, "", nil, false, nil
	}
	if err != nil {
		return Pointer{}, "", nil, false, err
	}
	p, err = ParsePointer(l.pointer(), e.Value)
	if err != nil {
		return Pointer{}, "", nil, false, err
	}
	return p, e.Version, e.Value, true, nil
}

func readManifest(ctx context.Context, s store.Store, p Pointer) (Manifest, error) {
	e, err := s.Get(ctx, p.Manifest)
	if err != nil {
		return Manifest{}, fmt.Errorf("publish: manifest of generation %s: %w", p.Generation, err)
	}
	if p.ManifestVersion != "" && e.Version != p.ManifestVersion {
		return Manifest{}, fmt.Errorf("%w: manifest %q changed since commit", ErrCorrupt, p.Manifest)
	}
	return ParseManifest(p.Manifest, e.Value)
}
