package s3api

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHTTPLayerDoesNotKnowTheLayout: the handler is an adapter over
// server/internal/s3model, which alone knows the records on disk; no file of
// this package (tests aside) imports the engine's storage library.
func TestHTTPLayerDoesNotKnowTheLayout(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources: %v", err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "go.etcd.io/bbolt") {
				t.Errorf("%s imports %s: table access belongs in server/internal/s3model", f, p)
			}
		}
	}
}
