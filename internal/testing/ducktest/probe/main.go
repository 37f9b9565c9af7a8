//go:build cgo

package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	dir, _ := os.MkdirTemp("", "dopen")
	defer os.RemoveAll(dir)
	for _, dsn := range []string{"", "?threads=1", "?autoload_known_extensions=false&autoinstall_known_extensions=false"} {
		start := time.Now()
		for i := 0; i < 20; i++ {
			p := filepath.Join(dir, fmt.Sprintf("f%d%d.duckdb", len(dsn), i))
			db, err := sql.Open("duckdb", p+dsn)
			if err != nil {
				panic(err)
			}
			if err := db.Ping(); err != nil {
				panic(err)
			}
			db.Exec("CREATE TABLE t (x INTEGER)")
			db.Close()
		}
		fmt.Println(dsn, time.Since(start)/20)
	}
}
