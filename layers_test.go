package dpsql_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDataFlowsOneWay: parser → planner → rewrite → exec, each package
// reading only those before it; measure (the plan's types) reads nothing
// of the engine's, and exec reaches the printers (measuresql) and the
// backends only through the interfaces it declares (docs/architecture.md).
func TestDataFlowsOneWay(t *testing.T) {
	t.Parallel()
	const module = "github.com/dpsql/dpsql/"
	forbidden := map[string][]string{
		"parser":     {"catalog", "planner", "rewrite", "exec", "measure", "measuresql", "backend", "budget"},
		"catalog":    {"planner", "rewrite", "exec", "measuresql", "backend"},
		"planner":    {"rewrite", "exec", "measure", "measuresql", "backend", "budget"},
		"rewrite":    {"exec", "measuresql", "backend", "budget"},
		"measure":    {""}, // nothing of the module
		"measuresql": {"parser", "catalog", "planner", "rewrite", "exec", "backend", "budget"},
		"exec":       {"measuresql", "backend", "budget"},
		"mechanism":  {""},
		"interval":   {""},
	}
	for pkg, bad := range forbidden {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				rest, ok := strings.CutPrefix(path, module)
				if !ok {
					continue
				}
				for _, b := range bad {
					if b == "" || rest == b || strings.HasPrefix(rest, b+"/") {
						t.Errorf("%s imports %s: data flows parser → planner → rewrite → exec", f, path)
					}
				}
			}
		}
	}
}
