// Command httpjson serves differentially private answers as JSON over HTTP,
// so a dashboard can be fed DP numbers without touching the data:
//
//	go run ./examples/httpjson --db adult.db --epsilon 0.1 --addr 127.0.0.1:8080
//	curl '127.0.0.1:8080/query?sql=SELECT+COUNT(*)+FROM+adult'
//
// Each request is one statement in analyst mode; a private query's cost is
// charged to the database's ledger before the answer is sent. Queries
// without their own OPTIONS (epsilon = ...) spend the server's --epsilon.
package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"

	"github.com/dpsql/dpsql"
)

func main() {
	db := flag.String("db", "", "dpsql database `FILE`")
	eps := flag.Float64("epsilon", 0.1, "default ε per query")
	addr := flag.String("addr", "127.0.0.1:8080", "listen `address`")
	flag.Parse()
	if *db == "" {
		log.Fatal("--db is required")
	}
	conn, err := sql.Open("dpsql", fmt.Sprintf("file:%s?epsilon=%g", *db, *eps))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	log.Printf("serving %s on http://%s/query", *db, *addr)
	log.Fatal(http.ListenAndServe(*addr, newHandler(conn)))
}

type answer struct {
	Columns []string `json:"columns,omitempty"`
	Rows    [][]any  `json:"rows,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// newHandler answers GET /query?sql=... with the released rows as JSON.
// Refusals (not private, over budget, syntax) are 400 with the message;
// they cost nothing.
func newHandler(db *sql.DB) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /query", func(w http.ResponseWriter, r *http.Request) {
		rows, err := db.QueryContext(r.Context(), r.URL.Query().Get("sql"))
		if err != nil {
			status := http.StatusBadRequest
			var se *dpsql.SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, dpsql.ErrNotPrivate) && !errors.Is(err, dpsql.ErrBudgetExhausted) &&
				!errors.Is(err, dpsql.ErrUnknownName) && !errors.Is(err, dpsql.ErrUnsupported) && !errors.Is(err, dpsql.ErrNoEpsilon) &&
				!errors.Is(err, dpsql.ErrOwnerOnly) {
				status = http.StatusInternalServerError
			}
			reply(w, status, answer{Error: err.Error()})
			return
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		ans := answer{Columns: cols, Rows: [][]any{}}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				reply(w, http.StatusInternalServerError, answer{Error: err.Error()})
				return
			}
			ans.Rows = append(ans.Rows, vals)
		}
		reply(w, http.StatusOK, ans)
	})
	return mux
}

func reply(w http.ResponseWriter, status int, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(a)
}
