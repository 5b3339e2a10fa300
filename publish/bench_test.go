package publish_test

import (
	"testing"

	"github.com/latchkey/latchkey/publish/publishtest"
)

// BenchmarkPublish100x1MiB is publishtest.Bench on each local backend (the
// server's are benchmarked in tests/publishserver).
func BenchmarkPublish100x1MiB(b *testing.B) {
	for name, open := range backends() {
		b.Run(name, func(b *testing.B) { publishtest.Bench(b, publishtest.Harness{New: open}) })
	}
}
