// Package store is the single-key contract every latchkey backend satisfies.
//
// Object stores and KV stores offer no locks and no multi-key transactions,
// but they do offer one atomic operation: a write that applies only if the
// key is still in the state the writer expects. This package names that
// operation once, with one error set, so that the coordination packages
// (cas, lease, publish) can be written once and run on any backend: memory,
// a local directory, latchkey's own server, S3 and S3-compatibles, Consul.
//
// # The contract
//
// A Store holds keys, each with a value and an opaque Version. Every
// successful write returns the new Version, so a chain of compare-and-swap
// writes needs no re-read. Versions are compared for equality only; they are
// not ordered, and a Version from before a Delete never matches the key
// created again afterwards.
//
// Writes carry a Condition:
//
//   - IfAbsent: create only; fails with ErrConflict if the key exists.
//   - IfMatch(v): compare-and-swap; fails with ErrConflict if the current
//     version is not v or the key is gone.
//   - Unconditional: overwrite.
//
// Every failure is reported as one of the sentinel errors, matched with
// errors.Is: ErrNotFound, ErrConflict, ErrTransient (retry is safe),
// ErrUnknownOutcome (the write may or may not have happened),
// ErrUnsupported, ErrInvalidKey. Backends wrap them in an *OpError that
// keeps the operation, key, backend and raw service status.
//
// A backend declares what it can do in Capabilities; code that needs CAS
// asks first. A backend that cannot check-and-write in one atomic step does
// not claim the capability, and refuses that condition with ErrUnsupported
// instead of running it unchecked.
//
// Every backend runs Guard (GuardPrefix for a List) before an operation,
// so a closed store, a done context and a bad key fail the same way on all
// of them.
//
// The conformance suite in store/storetest turns each obligation written in
// these doc comments into a subtest and runs it against every backend.
package store
