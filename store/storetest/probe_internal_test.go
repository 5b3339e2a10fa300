package storetest

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeprobe"
)

// everything declares every capability and has every optional interface;
// only its Capabilities and its type are looked at.
type everything struct{ store.Store }

func (everything) Capabilities() store.Capabilities {
	return store.Capabilities{CreateIfAbsent: true, CompareAndSwap: true, CompareAndDelete: true,
		Transactions: true, Watch: true, Streaming: true, UniqueVersions: true}
}
func (everything) Txn(context.Context, []store.TxnOp) ([]store.Version, error) { return nil, nil }
func (everything) WaitChange(context.Context, string, store.Version) error     { return nil }
func (everything) PutStream(context.Context, string, io.Reader, store.Condition) (store.Version, error) {
	return "", nil
}
func (everything) GetStream(context.Context, string) (io.ReadCloser, store.Version, error) {
	return nil, "", nil
}

// Every check of store/storeprobe runs as a subtest of the suite, in the
// group its area names, for a backend that declares what it needs: a
// check added to the probe without a place here fails this test instead
// of going unrun.
func TestEveryProbeCheckRuns(t *testing.T) {
	all, none := everything{}, plain{}
	subtests := map[string]subtest{}
	for _, g := range groups() {
		for _, st := range g.tests {
			name := g.name + "/" + st.name
			if _, dup := subtests[name]; dup {
				t.Errorf("two subtests named %q", name)
			}
			subtests[name] = st
		}
	}
	for _, c := range storeprobe.Checks() {
		area, sentence, _ := strings.Cut(c.Name, "/")
		g, ok := probeGroups[area]
		if !ok {
			t.Errorf("probe check %q: no group runs area %q", c.Name, area)
			continue
		}
		st, ok := subtests[g+"/"+sentence]
		switch {
		case !ok:
			t.Errorf("probe check %q is not a subtest %q", c.Name, g+"/"+sentence)
		case st.need == nil || !st.need(all):
			t.Errorf("probe check %q does not run on a store that declares everything", c.Name)
		case c.Capability != "" && st.need(none):
			t.Errorf("probe check %q runs on a store that declares no %s", c.Name, c.Capability)
		}
	}
}

// plain declares nothing optional.
type plain struct{ store.Store }

func (plain) Capabilities() store.Capabilities { return store.Capabilities{} }
