package audit

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// token splits SQL into tokens the minimizer deletes: strings, numbers,
// names, quoted names, two-character operators and single characters.
var token = regexp.MustCompile(`'(?:[^']|'')*'|"(?:[^"]|"")*"|[0-9][0-9.eE]*|[A-Za-z_][A-Za-z_0-9.]*|<>|!=|<=|>=|==|\|\||=>|\S`)

// Minimize shrinks a finding: first the statement, by deleting runs of
// tokens, then the database, by deleting runs of rows, keeping each cut
// that still fails a privacy check. It makes at most budget checks.
func Minimize(open Opener, dir string, f Finding, budget int) Finding {
	fails := func(db Database, st Statement) []string {
		if budget <= 0 {
			return nil
		}
		budget--
		sub, err := os.MkdirTemp(dir, "min")
		if err != nil {
			return nil
		}
		defer os.RemoveAll(sub)
		d, d2, err := db.Build(sub)
		if err != nil {
			return nil
		}
		pair, err := OpenPair(open, d, d2)
		if err != nil {
			return nil
		}
		defer pair.Close()
		probs := pair.Check(st)
		if (Finding{Problems: probs}).Privacy() {
			return probs
		}
		return nil
	}
	toks := token.FindAllString(f.Statement.SQL, -1)
	shrink(len(toks), func(keep func(int) bool) bool {
		var kept []string
		for i, t := range toks {
			if keep(i) {
				kept = append(kept, t)
			}
		}
		st := f.Statement
		st.SQL = strings.Join(kept, " ")
		if p := fails(f.DB, st); p != nil {
			toks, f.Statement, f.Problems = kept, st, p
			return true
		}
		return false
	})
	for ti := range f.DB.Tables {
		rows := f.DB.Tables[ti].Rows
		shrink(len(rows), func(keep func(int) bool) bool {
			var kept []string
			for i, r := range rows {
				if keep(i) {
					kept = append(kept, r)
				}
			}
			db := f.DB
			db.Tables = append([]Table(nil), f.DB.Tables...)
			db.Tables[ti].Rows = kept
			if p := fails(db, f.Statement); p != nil {
				rows, f.DB, f.Problems = kept, db, p
				return true
			}
			return false
		})
	}
	return f
}

// shrink tries deleting runs of n items, halving the run length down to
// one: try(keep) tests the list without the run and reports whether the
// cut was kept (the list is then shorter).
func shrink(n int, try func(keep func(int) bool) bool) {
	for size := max(n/2, 1); size >= 1; size /= 2 {
		for start := 0; start < n; {
			end := min(start+size, n)
			if try(func(i int) bool { return i < start || i >= end }) {
				n -= end - start
				continue
			}
			start = end
		}
		if size == 1 {
			break
		}
	}
}

// SaveCase writes the finding as a regression case under dir, named
// after name.
func SaveCase(dir, name string, f Finding, fault string) (string, error) {
	path := filepath.Join(dir, name+".case")
	return path, os.WriteFile(path, []byte(FormatCase(f, fault)), 0o644)
}
