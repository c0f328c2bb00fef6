// Package plugin is `kubectl mooring`: one file per command (status, backup, pause and
// resume, reconcile, doctor, version). The status trees are internal/objecttree's, built
// from a Snapshot of the cluster by pure functions; render.go draws them, so that both are
// tested without a cluster. It talks to the API server only; it never imports the engine.
package plugin
