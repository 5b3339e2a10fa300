// Package depcheck holds the dependency tests: the store contract and the
// coordination packages (store, cas, lease, publish) import the standard
// library, store and internal helpers only — never a backend, never an SDK
// (docs/architecture.md, "The layers") — and no package's code, as opposed
// to its tests, imports a test helper such as internal/testutil, or a
// floor above its own (internal, then the library, then server). It has no
// code of its own; see depcheck_test.go.
package depcheck
