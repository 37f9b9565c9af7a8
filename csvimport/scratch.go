package csvimport

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the scratch file's driver
)

// Scratch is a CSV file read, checked and typed into a scratch SQLite
// file, for a backend to copy from: a malformed file fails there, with
// its line number, exactly as an import into a dpsql file does, before
// the backend is touched.
type Scratch struct {
	DB  *sql.DB
	dir string
}

// ImportScratch imports the CSV file at path into table of a new
// scratch file, which Close removes.
func ImportScratch(ctx context.Context, table, path string, opts Options) (*Scratch, int64, []Column, error) {
	dir, err := os.MkdirTemp("", "dpsql-import-")
	if err != nil {
		return nil, 0, nil, err
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "scratch.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, 0, nil, err
	}
	s := &Scratch{DB: db, dir: dir}
	n, cols, err := Import(ctx, db, table, path, opts)
	if err != nil {
		s.Close()
		return nil, 0, nil, err
	}
	return s, n, cols, nil
}

// Close closes and removes the scratch file.
func (s *Scratch) Close() {
	s.DB.Close()
	os.RemoveAll(s.dir)
}

// NamesAndTypes are the columns' names and SQLite types.
func NamesAndTypes(cols []Column) (names, types []string) {
	for _, c := range cols {
		names, types = append(names, c.Name), append(types, c.Type)
	}
	return names, types
}
