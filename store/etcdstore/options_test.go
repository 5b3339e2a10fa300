package etcdstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/store/etcdstore"
)

// A negative option is refused by Open, naming the field; zero options
// open (nothing is contacted).
func TestOpenRefusesNegativeOptions(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]etcdstore.Options{
		"MaxValueSize": {Endpoints: []string{"127.0.0.1:1"}, MaxValueSize: -1},
		"DialTimeout":  {Endpoints: []string{"127.0.0.1:1"}, DialTimeout: -time.Millisecond},
	} {
		s, err := etcdstore.Open(ctx, &o)
		if err == nil || !strings.Contains(err.Error(), "Options."+name) {
			t.Errorf("Open with negative %s = %v, %v; want an error naming Options.%s", name, s, err, name)
		}
	}
	o := etcdstore.Options{Endpoints: []string{"127.0.0.1:1"}}
	s, err := etcdstore.Open(ctx, &o)
	if err != nil {
		t.Fatalf("Open with zero options: %v", err)
	}
	s.Close()
}
