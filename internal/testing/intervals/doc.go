// Package intervals holds only tests: the measured coverage of the 95%
// intervals dpsql releases with every value, end to end through the
// engine, with the production samplers on seeded sources. It is a
// package of its own so that its minutes of sampling run beside the
// engine's other tests (go test runs packages in parallel), not after
// them.
package intervals
