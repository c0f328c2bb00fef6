// Package plugin is `kubectl mooring`: one file per command (status, backup, pause and
// resume, reconcile, doctor, version), with the status trees built from a Snapshot of the
// cluster by pure functions (tree*.go) and drawn by render.go, so that both are tested
// without a cluster. It talks to the API server only; it never imports the engine.
package plugin
