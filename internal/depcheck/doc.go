// Package depcheck holds the dependency test that keeps the store
// contract and the coordination packages free of backends and cloud SDKs
// (DESIGN: "packages here import store only — never a backend, never an
// SDK"). It has no code of its own; see depcheck_test.go.
package depcheck
