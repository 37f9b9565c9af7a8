package ducktest

// HostileSchema is what an owner's DuckDB file may hold beside the rows
// (docs/privacy.md, "What a DuckDB file may hold"): a VIRTUAL generated
// column, a default, macros named like the built-ins the compiled
// statement and the catalog reads call (each raising), table macros
// named like the catalog's functions, a view, an enum and nested columns.
var HostileSchema = []string{
	`CREATE TYPE tier AS ENUM ('low', 'high')`,
	`CREATE TABLE orders (uid BIGINT, region VARCHAR, price INTEGER, qty INTEGER,
		total INTEGER GENERATED ALWAYS AS (price * qty), note VARCHAR DEFAULT 'n', t tier, tags INTEGER[], s STRUCT(a INTEGER))`,
	`CREATE VIEW order_totals AS SELECT uid, price * qty AS total FROM orders`,
	`CREATE MACRO isnan(a) AS error('macro isnan')`,
	`CREATE MACRO sum(a) AS error('macro sum')`,
	`CREATE MACRO count(a) AS error('macro count')`,
	`CREATE MACRO count_star() AS error('macro count_star')`,
	`CREATE MACRO row_number() AS error('macro row_number')`,
	`CREATE MACRO hash(a) AS error('macro hash'), (a, b) AS error('macro hash'), (a, b, c) AS error('macro hash'), (a, b, c, d) AS error('macro hash')`,
	`CREATE MACRO current_database() AS error('macro current_database')`,
	`CREATE MACRO duckdb_columns() AS TABLE SELECT error('macro duckdb_columns') AS x`,
	`CREATE MACRO duckdb_tables() AS TABLE SELECT error('macro duckdb_tables') AS x`,
}
