// Package casbench holds the benchmarks of cas.Update against real stores
// (memstore, filestore, latchkey serve in-process through consulstore).
// They live here, not in package cas, so that a program importing cas
// pulls in nothing of the server's through cas's tests.
//
//	go test -run '^$' -bench UpdateContended ./tests/casbench
package casbench
