// Package poll waits for a condition in tests: Eventually fails the test with what was
// awaited and what was last seen, Poll returns that as an error. It imports nothing but
// the standard library, so any test may use it, even one in a package that testutil
// itself imports (the instance manager's, the local cluster's), without a cycle and
// without building envtest.
package poll
