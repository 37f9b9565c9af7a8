package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend/duckdb"

	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

var shellBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// examplePostgres is the PostgreSQL database the documentation's
// examples name.
const examplePostgres = "postgres://me@localhost/shop"

// TestDocumentedCommandsRun runs every shell block of README.md and
// docs/tutorial.md as written, with sh -e in a fresh directory where
// `dpsql` is the binary under test, on PATH. The only rewrites: `go
// install ./cmd/dpsql` and `go build -o dpsql ./cmd/dpsql` put that binary
// in place, `go run ./cmd/dpsql` is `dpsql`, and `../shared/data/` points
// at the shared data. README's commands need nothing beside a fresh clone
// (issue 29: its quick start once read ../shared/data); the tutorial's
// need the shared data and are skipped without it. `go test` lines are not
// run (this is one of them).
func TestDocumentedCommandsRun(t *testing.T) {
	data, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "data"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []struct{ path, builds string }{{"README.md", "clinic.db"}, {"docs/tutorial.md", "adult.db"}} {
		t.Run(filepath.Base(doc.path), func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("..", "..", doc.path))
			if err != nil {
				t.Fatal(err)
			}
			needsData := false
			for _, b := range shellBlock.FindAllSubmatch(text, -1) {
				needsData = needsData || bytes.Contains(b[1], []byte("../shared/data/"))
			}
			if needsData {
				if _, err := os.Stat(filepath.Join(data, "adult.csv")); err != nil {
					if doc.path == "README.md" {
						t.Fatal("README's shell blocks read ../shared/data/, which a fresh clone does not have")
					}
					t.Skip("../shared/data/adult.csv not present")
				}
			}
			runShellBlocks(t, doc.path, string(text), data, doc.builds)
		})
	}
}

// runShellBlocks runs a document's shell blocks in order in one fresh
// directory, and checks that they built the database named builds.
func runShellBlocks(t *testing.T, doc, text, data, builds string) {
	// The PostgreSQL examples run against a private server.
	if strings.Contains(text, examplePostgres) {
		text = strings.ReplaceAll(text, examplePostgres, "'"+pgtest.StartT(t).URL()+"'")
	}
	blocks := shellBlock.FindAllStringSubmatch(text, -1)
	if len(blocks) == 0 {
		t.Errorf("%s: no shell blocks", doc)
	}
	dir := t.TempDir()
	for i, b := range blocks {
		if strings.Contains(b[1], ".duckdb") && !duckdb.Available {
			t.Logf("%s, shell block %d: skipped, this test binary was built without cgo, so without DuckDB (CI builds with it)", doc, i+1)
			continue
		}
		var lines []string
		for _, l := range strings.Split(b[1], "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "go test") {
				continue
			}
			l = strings.ReplaceAll(l, "go install ./cmd/dpsql", "true")
			l = strings.ReplaceAll(l, "go build -o dpsql ./cmd/dpsql", "cp \"$DPSQL\" dpsql")
			l = strings.ReplaceAll(l, "go run ./cmd/dpsql", "dpsql")
			l = strings.ReplaceAll(l, "../shared/data/", data+"/")
			lines = append(lines, l)
		}
		// A block that never ends (a server started in the foreground)
		// fails here, not at the package's timeout.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-e", "-c", strings.Join(lines, "\n"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"), "DPSQL="+binary, "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			err = fmt.Errorf("still running after 3 minutes (a command that does not end belongs in a text block): %w", err)
		}
		cancel()
		if err != nil {
			t.Errorf("%s, shell block %d: %v\n%s\n--- output\n%s", doc, i+1, err, b[1], out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, builds)); err != nil {
		t.Errorf("%s: its commands did not build %s: %v", doc, builds, err)
	}
}
