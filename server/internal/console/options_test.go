package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/internal/console"
	"github.com/latchkey/latchkey/server/internal/enginetest"
)

// New follows the project's Options idiom: zero fields take the defaults,
// a negative value is an error, and the one required field is reported.
func TestNewOptions(t *testing.T) {
	e := enginetest.Open(t)
	if _, err := console.New(&console.Options{Engine: e}); err != nil {
		t.Errorf("New with only the engine: %v", err)
	}
	for name, o := range map[string]console.Options{
		"PageSize":      {PageSize: -1},
		"SessionTTL":    {SessionTTL: -time.Second},
		"MaxSessions":   {MaxSessions: -1},
		"LoginBurst":    {LoginBurst: -1},
		"LoginInterval": {LoginInterval: -time.Second},
	} {
		o.Engine = e
		if _, err := console.New(&o); err == nil || !strings.Contains(err.Error(), "Options."+name) {
			t.Errorf("New with a negative %s: %v, want an error naming it (zero means the default)", name, err)
		}
	}
	if _, err := console.New(nil); err == nil {
		t.Error("New without an engine succeeded")
	}
}
