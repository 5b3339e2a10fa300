package console_test

import (
	"testing"

	"github.com/latchkey/latchkey/server/internal/console"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// New follows the project's Options idiom: zero fields take the defaults,
// a negative value is an error, and the one required field is reported.
func TestNewOptions(t *testing.T) {
	e, err := engine.Open(t.TempDir(), &engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := console.New(&console.Options{Engine: e}); err != nil {
		t.Errorf("New with only the engine: %v", err)
	}
	if _, err := console.New(&console.Options{Engine: e, PageSize: -1}); err == nil {
		t.Error("New with PageSize -1 succeeded; want an error (zero means DefaultPageSize)")
	}
	if _, err := console.New(nil); err == nil {
		t.Error("New without an engine succeeded")
	}
}
