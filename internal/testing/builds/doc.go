// Package builds holds only tests: what must hold across two builds of
// the dpsql command — a default one and one linked with its code and
// data at another address. A package of its own: it runs the go
// command, and its test binary links no DuckDB.
package builds
