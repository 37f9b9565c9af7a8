package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

var shellBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// examplePostgres is the PostgreSQL database the documentation's
// examples name.
const examplePostgres = "postgres://me@localhost/shop"

// TestDocumentedCommandsRun runs every shell block of README.md and
// docs/tutorial.md as written, with sh -e in a fresh directory where
// `dpsql` is the binary under test. The only rewrites: `go build -o dpsql
// ./cmd/dpsql` copies that binary, `go run ./cmd/dpsql` is `dpsql`, and
// `../shared/data/` points at the shared data (the test skips when it is
// absent). `go test` lines are not run (this is one of them). Issue 11:
// the quick start once failed at its fourth step.
func TestDocumentedCommandsRun(t *testing.T) {
	data, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "data"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "adult.csv")); err != nil {
		t.Skip("../shared/data/adult.csv not present")
	}
	for _, doc := range []string{"README.md", "docs/tutorial.md"} {
		text, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		// The PostgreSQL examples run against a private server.
		if bytes.Contains(text, []byte(examplePostgres)) {
			text = bytes.ReplaceAll(text, []byte(examplePostgres), []byte("'"+pgtest.StartT(t).URL()+"'"))
		}
		blocks := shellBlock.FindAllStringSubmatch(string(text), -1)
		if len(blocks) == 0 {
			t.Errorf("%s: no shell blocks", doc)
		}
		dir := t.TempDir()
		for i, b := range blocks {
			var lines []string
			for _, l := range strings.Split(b[1], "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "go test") {
					continue
				}
				l = strings.ReplaceAll(l, "go build -o dpsql ./cmd/dpsql", "cp \"$DPSQL\" dpsql")
				l = strings.ReplaceAll(l, "go run ./cmd/dpsql", "dpsql")
				l = strings.ReplaceAll(l, "../shared/data/", data+"/")
				lines = append(lines, l)
			}
			cmd := exec.Command("sh", "-e", "-c", strings.Join(lines, "\n"))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"), "DPSQL="+binary, "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
			cmd.Stdin = strings.NewReader("")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s, shell block %d: %v\n%s\n--- output\n%s", doc, i+1, err, b[1], out)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "adult.db")); err != nil {
			t.Errorf("%s: its commands did not build adult.db: %v", doc, err)
		}
	}
}
