package depcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/latchkey/latchkey"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath string
	Deps       []string // transitive, without test-only imports
}

// contract packages may depend on the standard library, the store
// contract and internal helpers only (checked transitively), and the
// coordination packages named in mayUse also on those it lists: lease and
// publish build their compare-and-swap loops on cas.Update.
var contract = []string{"store", "cas", "lease", "publish"}

var mayUse = map[string][]string{"lease": {"cas"}, "publish": {"cas"}}

// sdkPrefixes are import paths of cloud SDKs and service clients.
var sdkPrefixes = []string{
	"github.com/aws/", "github.com/minio/", "github.com/hashicorp/",
	"cloud.google.com/", "google.golang.org/", "github.com/Azure/", "go.etcd.io/etcd/",
}

// sdkBackends are the store backends that exist to wrap an SDK, and
// storeurl, which knows them all; they are exempt from the SDK rule.
var sdkBackends = []string{"store/storeurl", "store/s3store", "store/consulstore",
	"store/etcdstore", "store/gcsstore", "store/azblobstore"}

// sdkFree are the trees (with subpackages, such as test helpers) that may
// not reach an SDK.
var sdkFree = []string{"store", "cas", "lease", "publish"}

func rel(path string) string { return strings.TrimPrefix(path, module+"/") }

func under(path, dir string) bool {
	p := rel(path)
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// violations returns one line per forbidden dependency.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		strict := slices.Contains(contract, rel(p.ImportPath))
		exempt := slices.ContainsFunc(sdkBackends, func(d string) bool { return under(p.ImportPath, d) })
		checked := slices.ContainsFunc(sdkFree, func(d string) bool { return under(p.ImportPath, d) })
		for _, d := range p.Deps {
			switch {
			case strict && !standard(d) && d != module+"/store" && !under(d, "internal") && !slices.Contains(mayUse[rel(p.ImportPath)], rel(d)):
				out = append(out, fmt.Sprintf("%s imports %s: it may import only the standard library, store and internal helpers", p.ImportPath, d))
			case checked && !exempt && slices.ContainsFunc(sdkPrefixes, func(s string) bool { return strings.HasPrefix(d, s) }):
				out = append(out, fmt.Sprintf("%s imports the SDK package %s", p.ImportPath, d))
			}
		}
	}
	return out
}

// list runs go list on patterns ("<module>/cas/...") and decodes the
// fields named (P's, comma-separated) of each package into a P; a tree not
// yet written matches nothing and is skipped.
func list[P any](t *testing.T, fields string, patterns ...string) []P {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=" + fields}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []P
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p P
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestNoBackendsOrSDKsInContractAndCoordination(t *testing.T) {
	var trees []string
	for _, d := range sdkFree {
		trees = append(trees, module+"/"+d+"/...")
	}
	pkgs := list[pkg](t, "ImportPath,Deps", trees...)
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[rel(p.ImportPath)] = true
	}
	for _, must := range []string{"store", "cas", "store/memstore"} {
		if !seen[must] {
			t.Fatalf("go list did not report %s; the check would be vacuous (saw %d packages)", must, len(pkgs))
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// The rules catch what they are meant to catch.
func TestViolationsAreFound(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	bad := []pkg{
		{m("cas"), []string{"context", m("store"), m("store/memstore")}},
		{m("store"), []string{"fmt", "go.etcd.io/bbolt"}},
		{m("lease/leasetest"), []string{m("store/faultstore"), "github.com/aws/aws-sdk-go-v2/service/s3"}},
		{m("store/filestore"), []string{"github.com/hashicorp/consul/api"}},
		{m("cas"), []string{m("lease")}},
		{m("store"), []string{m("cas")}},
	}
	good := []pkg{
		{m("publish"), []string{"context", m("store"), m("internal/backoff"), m("cas")}},
		{m("lease"), []string{m("store"), m("cas")}},
		{m("store/storetest"), []string{"github.com/anishathalye/porcupine", m("store/faultstore")}},
		{m("store/s3store"), []string{"github.com/aws/aws-sdk-go-v2/service/s3"}},
		{m("store/storeurl"), []string{"github.com/hashicorp/consul/api"}},
		{m("server"), []string{"github.com/prometheus/client_golang/prometheus"}},
	}
	if v := violations(bad); len(v) != len(bad) {
		t.Errorf("found %d violations in %d bad packages:\n%s", len(v), len(bad), strings.Join(v, "\n"))
	}
	if v := violations(good); len(v) != 0 {
		t.Errorf("false alarms:\n%s", strings.Join(v, "\n"))
	}
}

// testOnly are the helper packages for tests: no package's non-test code
// may import them (go list's Deps leaves test-only imports out), except
// another of them.
var testOnly = []string{"internal/testutil", "internal/powerfs", "server/internal/crashtest", "server/internal/enginetest"}

// testOnlyViolations returns one line per package whose code (not its
// tests) reaches a test-only helper.
func testOnlyViolations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if slices.ContainsFunc(testOnly, func(h string) bool { return under(p.ImportPath, h) }) {
			continue
		}
		for _, d := range p.Deps {
			if slices.ContainsFunc(testOnly, func(h string) bool { return under(d, h) }) {
				out = append(out, fmt.Sprintf("%s imports the test helper %s outside its tests", p.ImportPath, d))
			}
		}
	}
	return out
}

func TestTestHelpersOnlyInTests(t *testing.T) {
	pkgs := list[pkg](t, "ImportPath,Deps", module+"/...")
	if len(pkgs) < 10 {
		t.Fatalf("go list reported %d packages; the check would be vacuous", len(pkgs))
	}
	for _, v := range testOnlyViolations(pkgs) {
		t.Error(v)
	}
	m := func(p string) string { return module + "/" + p }
	bad := []pkg{{m("store/s3store"), []string{"context", m("internal/testutil")}}}
	if v := testOnlyViolations(bad); len(v) != 1 {
		t.Errorf("a package importing internal/testutil was not caught: %q", v)
	}
}

// floors are the tree's layers, lowest first (docs/architecture.md, "The
// floors"): code may import its own floor and those below it, never one
// above. internal/ is the ground floor; a folder not named here (cmd,
// tests) is the top and may import anything.
var floors = [][]string{
	{"internal"},
	{"store", "cas", "lease", "publish"},
	{"server"},
}

// floorOf returns the index of path's floor, or len(floors) for the top.
func floorOf(path string) int {
	for i, dirs := range floors {
		if slices.ContainsFunc(dirs, func(d string) bool { return under(path, d) }) {
			return i
		}
	}
	return len(floors)
}

// floorViolations returns one line per import of ours that points up a
// floor. Only code counts: a test may reach up (a store's tests start the
// server in-process), since go list's Deps leave tests out.
func floorViolations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, d := range p.Deps {
			if strings.HasPrefix(d, module+"/") && floorOf(d) > floorOf(p.ImportPath) {
				out = append(out, fmt.Sprintf("%s imports %s, a floor above it", p.ImportPath, d))
			}
		}
	}
	return out
}

func TestNoImportPointsUp(t *testing.T) {
	pkgs := list[pkg](t, "ImportPath,Deps", module+"/...")
	per := make([]int, len(floors)+1)
	for _, p := range pkgs {
		per[floorOf(p.ImportPath)]++
	}
	for i, n := range per[:len(floors)] {
		if n == 0 {
			t.Fatalf("no package on floor %v; the check would be vacuous", floors[i])
		}
	}
	for _, v := range floorViolations(pkgs) {
		t.Error(v)
	}
	m := func(p string) string { return module + "/" + p }
	bad := []pkg{
		{m("internal/backoff"), []string{"context", m("store")}},
		{m("cas"), []string{m("server/servertest")}},
		{m("store/consulstore"), []string{m("server/internal/consulapi")}},
		{m("server/internal/console"), []string{m("tests/failover")}},
		{m("server"), []string{m("cmd/latchkey")}},
	}
	if v := floorViolations(bad); len(v) != len(bad) {
		t.Errorf("found %d of %d upward imports:\n%s", len(v), len(bad), strings.Join(v, "\n"))
	}
	good := []pkg{
		{m("server/internal/console"), []string{m("lease"), m("publish"), m("internal/backoff")}},
		{m("lease"), []string{m("cas"), m("store"), m("internal/backoff")}},
		{m("tests/failover"), []string{m("lease"), m("store/etcdstore")}},
		{m("internal/fsutil"), []string{"os", "golang.org/x/sys/unix"}},
	}
	if v := floorViolations(good); len(v) != 0 {
		t.Errorf("false alarms:\n%s", strings.Join(v, "\n"))
	}
}

// The server's own layers (docs/architecture.md, "The server"): the
// engine is a store that knows no service, so nothing it reaches is a
// service's package (server/internal/consul*, server/internal/s3*); and
// bbolt is the engine's business alone, so no other package imports it
// directly (consulapi and consulmodel reach the records through the
// engine, as s3api and s3model do).
const (
	enginePkg = "server/internal/engine"
	bboltPkg  = "go.etcd.io/bbolt"
)

var servicePrefixes = []string{"server/internal/consul", "server/internal/s3"}

// layerPkg is what `go list -json` says of one package's own imports and
// of everything it reaches.
type layerPkg struct {
	ImportPath string
	Imports    []string // direct, without test-only imports
	Deps       []string // transitive, without test-only imports
}

// serverLayerViolations returns one line per broken rule of the server's
// layers.
func serverLayerViolations(pkgs []layerPkg) []string {
	var out []string
	for _, p := range pkgs {
		if under(p.ImportPath, enginePkg) {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, module+"/") && slices.ContainsFunc(servicePrefixes, func(s string) bool { return strings.HasPrefix(rel(d), s) }) {
					out = append(out, fmt.Sprintf("%s imports %s: the engine knows no service", p.ImportPath, d))
				}
			}
			continue
		}
		if slices.Contains(p.Imports, bboltPkg) {
			out = append(out, fmt.Sprintf("%s imports %s: only the engine uses bbolt", p.ImportPath, bboltPkg))
		}
	}
	return out
}

func TestServerLayers(t *testing.T) {
	pkgs := list[layerPkg](t, "ImportPath,Imports,Deps", module+"/...")
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[rel(p.ImportPath)] = true
	}
	for _, must := range []string{enginePkg, "server/internal/consulapi", "server/internal/consulmodel", "server/internal/s3api"} {
		if !seen[must] {
			t.Fatalf("go list did not report %s; the check would be vacuous", must)
		}
	}
	for _, v := range serverLayerViolations(pkgs) {
		t.Error(v)
	}
	m := func(p string) string { return module + "/" + p }
	bad := []layerPkg{
		{ImportPath: m(enginePkg), Deps: []string{"context", m("server/internal/consulmodel")}},
		{ImportPath: m(enginePkg), Deps: []string{m("server/internal/s3model")}},
		{ImportPath: m("server/internal/consulapi"), Imports: []string{bboltPkg}},
		{ImportPath: m("server/internal/consulmodel"), Imports: []string{m(enginePkg), bboltPkg}},
	}
	if v := serverLayerViolations(bad); len(v) != len(bad) {
		t.Errorf("found %d of %d violations:\n%s", len(v), len(bad), strings.Join(v, "\n"))
	}
	good := []layerPkg{
		{ImportPath: m(enginePkg), Imports: []string{bboltPkg}, Deps: []string{bboltPkg, m("internal/fsutil"), m("store")}},
		{ImportPath: m("server/internal/consulapi"), Imports: []string{m("server/internal/consulmodel"), m(enginePkg)}, Deps: []string{bboltPkg}},
		{ImportPath: m("server/internal/consulmodel"), Imports: []string{m(enginePkg)}, Deps: []string{bboltPkg}},
	}
	if v := serverLayerViolations(good); len(v) != 0 {
		t.Errorf("false alarms:\n%s", strings.Join(v, "\n"))
	}
}
