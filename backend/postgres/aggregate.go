package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/internal/testhooks"
)

// Measure is one native measurement of a mirrored table (the engine's
// rewrite.PushedMeasure): Kind 'n' counts rows, 'c' the non-NULL values
// of Column, 's' sums those values clipped to [Lo, Hi].
type Measure struct {
	Kind   byte
	Column string
	Lo, Hi int64
}

// Aggregate measures the mirrored table called name in the state file db
// in PostgreSQL itself, in one statement, instead of sending its rows:
// for each measure its exact value (nil for a sum over no value). ok is
// false — the caller then scans as usual — when name is not a mirror or
// a measured column is not an int2, int4 or int8 column: only there do
// PostgreSQL's values, comparisons and sums agree exactly with what
// SQLite's scan would measure (a float's NaN is NULL in SQLite, a
// boolean does not compare with an integer in PostgreSQL).
//
// Nothing in the statement can fail on a value: each column is read as
// int8 (a widening), compared with int8 parameters, and summed with
// PostgreSQL's SUM of int8, a numeric that does not overflow, sent as
// its exact decimal text. Like a scan, it reads only tables Mirror would
// mirror (columns checks again).
func Aggregate(ctx context.Context, db *sql.DB, name string, measures []Measure) ([]*big.Int, bool, error) {
	if testhooks.PostgresGrouping.Load() == testhooks.GroupNever {
		return nil, false, nil // tests: PostgreSQL aggregates nothing
	}
	id, schema, table, ok, err := mirrorOf(ctx, db, name)
	if err != nil || !ok {
		return nil, false, err
	}
	pool, err := Lookup(id)
	if err != nil {
		return nil, false, fmt.Errorf("table %s: %w", Quote(name), err)
	}
	cols, err := columns(ctx, pool, schema, table)
	if err != nil {
		return nil, false, fmt.Errorf("table %s: %w", Quote(name), err)
	}
	integer := map[string]bool{}
	for _, c := range cols {
		integer[c.name] = c.compared == intCompare
	}
	exprs := make([]string, len(measures))
	var args []any
	param := func(v int64) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args)) + "::int8"
	}
	for i, m := range measures {
		if m.Kind == 'n' {
			exprs[i] = "COUNT(*)::text"
			continue
		}
		if !integer[m.Column] {
			return nil, false, nil
		}
		x := Quote(m.Column) + "::int8"
		switch m.Kind {
		case 'c':
			exprs[i] = "COUNT(" + x + ")::text"
		case 's':
			lo, hi := param(m.Lo), param(m.Hi)
			exprs[i] = fmt.Sprintf("SUM(CASE WHEN %s < %s THEN %s WHEN %s > %s THEN %s ELSE %s END)::text", x, lo, lo, x, hi, hi, x)
		default:
			return nil, false, nil
		}
	}
	stmt := "SELECT " + strings.Join(exprs, ", ") + " FROM " + Quote(schema) + "." + Quote(table)
	observe(stmt)
	texts := make([]*string, len(measures))
	dest := make([]any, len(measures))
	for i := range texts {
		dest[i] = &texts[i]
	}
	if err := pool.QueryRow(ctx, stmt, args...).Scan(dest...); err != nil {
		return nil, false, err
	}
	values := make([]*big.Int, len(measures))
	for i, t := range texts {
		if t == nil {
			continue
		}
		v, ok := new(big.Int).SetString(*t, 10)
		if !ok {
			return nil, false, fmt.Errorf("postgres: %q is not an integer", *t) // not reached: counts and sums of integers
		}
		values[i] = v
	}
	return values, true, nil
}

// mirrorOf reads the module arguments of the mirror called name (ok is
// false when name is not a mirror).
func mirrorOf(ctx context.Context, db *sql.DB, name string) (id, schema, table string, ok bool, err error) {
	var stmt string
	err = db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE`, name).Scan(&stmt)
	if err == sql.ErrNoRows {
		return "", "", "", false, nil
	}
	if err != nil {
		return "", "", "", false, err
	}
	id, schema, table, ok = parseMirror(stmt)
	return id, schema, table, ok, nil
}

// parseMirror reads the module arguments from a mirror's CREATE VIRTUAL
// TABLE statement (Mirror's; ok is false for any other statement).
func parseMirror(stmt string) (id, schema, table string, ok bool) {
	_, rest, found := strings.Cut(stmt, " USING "+Module+"(")
	if !found || !strings.HasSuffix(rest, ")") {
		return "", "", "", false
	}
	var vals []string
	rest = strings.TrimSuffix(rest, ")")
	for rest != "" {
		// Literal's strings: a quote, anything with quotes doubled, a quote.
		end := 1
		for end < len(rest) {
			if rest[end] == '\'' {
				if end+1 < len(rest) && rest[end+1] == '\'' {
					end += 2
					continue
				}
				break
			}
			end++
		}
		v, err := unliteral(rest[:min(end+1, len(rest))])
		if err != nil {
			return "", "", "", false
		}
		vals = append(vals, v)
		rest = strings.TrimPrefix(rest[min(end+1, len(rest)):], ", ")
	}
	if len(vals) != 3 || !strings.HasSuffix(stmt, mirrorArgs(vals[0], vals[1], vals[2])) {
		return "", "", "", false
	}
	return vals[0], vals[1], vals[2], true
}
