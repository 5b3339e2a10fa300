package consulstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/consulstore"
)

// TestOpenRefusesNegativeOptions: a negative option is an error from Open
// naming the field, never quietly the default (CONTRIBUTING.md, "Options");
// zero still opens, meaning the named defaults. Open does not contact
// Consul.
func TestOpenRefusesNegativeOptions(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]consulstore.Options{
		"MaxValueSize":     {MaxValueSize: -1},
		"WaitTime":         {WaitTime: -time.Second},
		"MaxConns":         {MaxConns: -1},
		"RequestTimeout":   {RequestTimeout: -time.Second},
		"BackPressureWait": {BackPressureWait: -time.Second},
	} {
		o.Address = "127.0.0.1:1"
		s, err := consulstore.Open(ctx, &o)
		if err == nil || !strings.Contains(err.Error(), "Options."+name) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open with negative %s = %v; want an error naming Options.%s", name, err, name)
		}
	}
	s, err := consulstore.Open(ctx, &consulstore.Options{Address: "127.0.0.1:1"})
	if err != nil {
		t.Fatalf("Open with zero options: %v", err)
	}
	s.Close()
}
