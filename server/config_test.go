package server_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server"
)

// TestNewRefusesNegativeOptions: a negative bound is an error from New
// naming the field, never quietly the default (CONTRIBUTING.md,
// "Options"); zero still opens, meaning the named Default… constants.
// MaxConnsPerClient is the one documented exception: negative means no
// limit (Consul's http_max_conns_per_client of 0).
func TestNewRefusesNegativeOptions(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	for name, c := range map[string]server.Config{
		"ReadHeaderTimeout": {ReadHeaderTimeout: -time.Second},
		"IdleTimeout":       {IdleTimeout: -time.Nanosecond},
		"MaxHeaderBytes":    {MaxHeaderBytes: -1},
		"ShutdownTimeout":   {ShutdownTimeout: -time.Millisecond},
		"ConsulMaxSessions": {ConsulMaxSessions: -1},
	} {
		c.DataDir, c.NoSync, c.Logger = t.TempDir(), true, quiet
		s, err := server.New(c)
		if err == nil || !strings.Contains(err.Error(), "."+name+" ") {
			if s != nil {
				s.Close()
			}
			t.Errorf("New with negative %s = %v; want an error naming %s", name, err, name)
		}
	}
	s, err := server.New(server.Config{DataDir: t.TempDir(), NoSync: true, Logger: quiet, MaxConnsPerClient: -1})
	if err != nil {
		t.Fatalf("New with zero options and MaxConnsPerClient -1: %v", err)
	}
	s.Close()
	if server.DefaultReadHeaderTimeout != 10*time.Second || server.DefaultIdleTimeout != 120*time.Second ||
		server.DefaultMaxHeaderBytes != 64<<10 || server.DefaultShutdownTimeout != 15*time.Second {
		t.Errorf("defaults %v %v %v %v; want the documented 10s, 120s, 64 KiB, 15s",
			server.DefaultReadHeaderTimeout, server.DefaultIdleTimeout, server.DefaultMaxHeaderBytes, server.DefaultShutdownTimeout)
	}
}
