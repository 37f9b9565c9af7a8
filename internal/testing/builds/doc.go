// Package builds holds only tests: what must hold across two builds of
// the dpsql command — a default one and a position-independent one,
// whose code addresses differ from run to run. A package of its own
// because the second build compiles every package again (-shared): about
// 90 s on a fresh two-core machine, which would take cmd/dpsql's tests
// past three minutes in the README's test command.
package builds
