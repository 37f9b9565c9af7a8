//go:build cgo

package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		panic(err)
	}
	for _, q := range os.Args[1:] {
		rows, err := db.Query(q)
		if err != nil {
			fmt.Println(q, "ERR", err)
			continue
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			fmt.Printf("%s => %#v\n", q, vals)
		}
		rows.Close()
	}
}
