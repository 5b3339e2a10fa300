package consulapi

import (
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/server/internal/enginetest"
)

// New refuses a negative limit, naming it, instead of taking it for the
// default; zero fields get the named defaults.
func TestOptionsNegativeIsAnError(t *testing.T) {
	e := enginetest.Open(t)
	for name, o := range map[string]Options{
		"MaxValueSize":       {MaxValueSize: -1},
		"MaxKeyLen":          {MaxKeyLen: -1},
		"MaxTxnBody":         {MaxTxnBody: -1},
		"MaxTxnOps":          {MaxTxnOps: -1},
		"MinSessionTTL":      {MinSessionTTL: -time.Second},
		"DefaultQueryTime":   {DefaultQueryTime: -time.Second},
		"MaxQueryTime":       {MaxQueryTime: -time.Second},
		"MaxBlockingQueries": {MaxBlockingQueries: -1},
		"MaxSessions":        {MaxSessions: -1},
	} {
		o.NodeName = "n"
		h, err := New(e, &o)
		if err == nil {
			h.Close()
			t.Errorf("New with a negative %s: no error", name)
			continue
		}
		if !strings.Contains(err.Error(), "Options."+name) {
			t.Errorf("New with a negative %s: %v, want it named", name, err)
		}
	}
	h, err := New(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	want := Options{NodeName: h.opts.NodeName, Datacenter: DefaultDatacenter, Logger: h.opts.Logger,
		MaxValueSize: DefaultMaxValueSize, MaxKeyLen: DefaultMaxKeyLen, MaxTxnBody: DefaultMaxTxnBody,
		MaxTxnOps: DefaultMaxTxnOps, MinSessionTTL: DefaultMinSessionTTL, DefaultQueryTime: DefaultQueryWait,
		MaxQueryTime: DefaultMaxQueryTime, MaxBlockingQueries: DefaultMaxBlockingQueries, MaxSessions: DefaultMaxSessions}
	if h.opts != want || h.opts.NodeName == "" || h.opts.Logger == nil {
		t.Errorf("defaults %+v, want %+v", h.opts, want)
	}
}
