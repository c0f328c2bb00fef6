package tracing

// Propagator is propagator for the tests.
var Propagator = propagator
