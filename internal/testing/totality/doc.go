// Package totality holds only tests: the totality property of the
// measurement dpsql compiles for an engine — over a table of adversarial
// values, every aggregate kind, bound and filter succeeds in the engine
// and equals the reference evaluator's answer. A package of its own so
// that its thousands of queries run beside the engine's other tests.
package totality
