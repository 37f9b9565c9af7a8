package postgres

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// TestRawDecodingIsPgxs: for every type the fast path decodes, on
// extreme values and NULLs, the decoded row equals what pgx's Values
// gives for the same row — in the forms the cursor's statements ask for.
func TestRawDecodingIsPgxs(t *testing.T) {
	srv := pgtest.StartT(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE v (a int2, b int4, c int8, d bool, e float4, f float8, g bytea, h text, n numeric);
		INSERT INTO v VALUES
		(-32768, -2147483648, -9223372036854775808, true, '-Infinity', '-0', '\x00ff', 'naïve', '1e400'),
		(32767, 2147483647, 9223372036854775807, false, 'NaN', 'NaN', '', '', 'NaN'),
		(0, 0, 0, NULL, 1.5, 5e-324, NULL, NULL, NULL),
		(NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'x', -0.5)`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SELECT a, b, c, d, e, f, g, h, n::text, tableoid::int8, ctid, tableoid FROM v`,
		`SELECT float8send(f::float8), h::text COLLATE "C", a, COUNT(*) FROM v GROUP BY 1, 2, 3`,
	} {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		decoders := rawDecoders(rows.FieldDescriptions())
		if decoders == nil {
			t.Fatalf("%s: no fast path", q)
		}
		n := 0
		for rows.Next() {
			n++
			raws := rows.RawValues()
			fast := make([]any, len(raws))
			for i, b := range raws {
				if b == nil {
					continue
				}
				v, ok := decoders[i](b)
				if !ok {
					t.Fatalf("%s: field %d not decoded", q, i)
				}
				fast[i] = v
			}
			slow, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			// What the cursor delivers: both through sqliteValue (which
			// widens integers, maps NaN to NULL, copies bytes).
			for i := range slow {
				a, b := sqliteValue(kindText, fast[i]), sqliteValue(kindText, slow[i])
				if string(rows.FieldDescriptions()[i].Name) == "n" {
					a, b = sqliteValue(kindNumeric, fast[i]), sqliteValue(kindNumeric, slow[i])
				}
				if !reflect.DeepEqual(a, b) || math.Signbit(toFloat(a)) != math.Signbit(toFloat(b)) {
					t.Errorf("%s: field %d: %#v, pgx %#v", q, i, a, b)
				}
			}
		}
		if err := rows.Err(); err != nil || n == 0 {
			t.Fatalf("%s: %d rows, %v", q, n, err)
		}
	}
	// A type the fast path does not know sends the scan through pgx.
	rows, err := conn.Query(ctx, `SELECT now()`)
	if err != nil {
		t.Fatal(err)
	}
	if rawDecoders(rows.FieldDescriptions()) != nil {
		t.Error("a timestamp was given a fast decoder")
	}
	rows.Close()
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	}
	return 0
}
