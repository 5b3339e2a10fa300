package store

import (
	"context"
	"io"
)

// Version identifies one write of one key. It is opaque: an ETag, a GCS
// generation, a Consul ModifyIndex, an etcd mod_revision, a counter. Compare
// versions for equality only; they are not ordered. The zero Version ("")
// is never the version of a stored key.
type Version string

// Entry is a key's current value and version.
type Entry struct {
	Key     string
	Value   []byte
	Version Version
}

// Item is one key of a listing, with its version.
type Item struct {
	Key     string
	Version Version
}

// ListOptions bound one page of a listing. The zero value lists from the
// start with the backend's default page size.
type ListOptions struct {
	// After lists only keys strictly greater than After (byte order). Pass
	// the previous page's Next to continue.
	After string
	// Limit caps the number of items in the page; 0 means the backend's
	// default (at least 100).
	Limit int
}

// Page is one page of a listing.
type Page struct {
	// Items are in ascending byte order of Key.
	Items []Item
	// Next is empty when the listing is complete; otherwise pass it as
	// ListOptions.After to read the next page.
	Next string
}

// Store is the single-key contract.
//
// Every method takes a context first and must return promptly, with an
// error matching the context's error or ErrUnknownOutcome, once the context
// is done. All methods are safe for concurrent use.
type Store interface {
	// Get returns the key's value and version. It must return an error
	// matching ErrNotFound when the key does not exist.
	Get(ctx context.Context, key string) (Entry, error)

	// Put writes value under key if cond holds, atomically with the check,
	// and returns the new version.
	//
	// A store that does not declare Capabilities.CreateIfAbsent must return
	// an error matching ErrUnsupported for IfAbsent, and one that does not
	// declare Capabilities.CompareAndSwap must do so for IfMatch, without
	// writing. Otherwise it must return an error matching ErrConflict when
	// cond is IfAbsent and the key exists, or when cond is IfMatch(v) and
	// the key does not exist or its version is not v. A failed Put changes
	// nothing. A successful
	// Put returns a version different from the key's current one whenever
	// the value differs; on a store with Capabilities.UniqueVersions, every
	// successful Put returns a version different from every version the key
	// had before, including versions from before a Delete.
	Put(ctx context.Context, key string, value []byte, cond Condition) (Version, error)

	// Delete removes key if cond holds. An unconditional Delete of a missing
	// key succeeds. It must return an error matching ErrUnsupported when
	// cond is IfAbsent, or when cond is IfMatch and the store does not
	// declare Capabilities.CompareAndDelete. Otherwise it must return an
	// error matching ErrConflict when cond is IfMatch(v) and the key does
	// not exist or its version is not v.
	Delete(ctx context.Context, key string, cond Condition) error

	// List returns one page of the keys that start with prefix, in
	// ascending byte order. An empty prefix lists every key. A listing is
	// not a snapshot: keys written while paging may or may not appear.
	List(ctx context.Context, prefix string, opts *ListOptions) (Page, error)

	// Capabilities says which conditional operations the backend performs
	// atomically.
	Capabilities() Capabilities

	// Close releases the backend's resources. Calls after Close fail.
	Close() error
}

// Capabilities are declared by a backend, never assumed by callers. A
// conditional operation whose capability is not declared fails with an
// error matching ErrUnsupported and changes nothing; it never runs
// unchecked. Every backend in this module declares CreateIfAbsent and
// CompareAndSwap; cas, lease and publish refuse a store without them.
type Capabilities struct {
	// CreateIfAbsent: Put with IfAbsent is atomic.
	CreateIfAbsent bool
	// CompareAndSwap: Put with IfMatch is atomic.
	CompareAndSwap bool
	// CompareAndDelete: Delete with IfMatch is atomic.
	CompareAndDelete bool
	// Transactions: the store implements Transactor.
	Transactions bool
	// Watch: the store implements Watcher with a native wait, not polling.
	Watch bool
	// Streaming: the store implements Streamer without buffering whole
	// values in memory.
	Streaming bool
	// UniqueVersions: every successful write returns a version never
	// returned before for that key, even for identical bytes and across a
	// Delete, so IfMatch(v) can only match the very write that returned v
	// (no A→B→A). An object store whose version is a digest of the bytes
	// (S3's ETag) lacks it: writing the same bytes again brings back the
	// same version. Records that carry a nonce or live under unique names
	// (cas with unique values, lease records, publish manifests) do not
	// need it; plain user values do.
	UniqueVersions bool
}

// Watcher is implemented by backends with a native way to wait for a key to
// change (a Consul blocking query, an etcd watch, latchkey's server).
type Watcher interface {
	// WaitChange blocks until the key's version is no longer last (the zero
	// Version standing for "absent"), or ctx is done, whichever is first.
	// It may return early without a change; callers re-read. It returns
	// ctx's error when ctx ends first.
	WaitChange(ctx context.Context, key string, last Version) error
}

// Streamer is implemented by backends that can move values without holding
// them whole in memory. Use the package functions PutStream and GetStream,
// which fall back to Put and Get on other backends.
type Streamer interface {
	// PutStream is Put with the value read from r until EOF. The condition
	// is checked when the value has been read whole, atomically with
	// publication; a failed PutStream leaves nothing behind.
	PutStream(ctx context.Context, key string, r io.Reader, cond Condition) (Version, error)
	// GetStream is Get with the value returned as a reader the caller
	// closes. The reader yields exactly the bytes of the returned version.
	GetStream(ctx context.Context, key string) (io.ReadCloser, Version, error)
}
