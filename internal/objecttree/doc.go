// Package objecttree is the status tree of Mooring's objects: a Snapshot of a namespace
// read once (ReadSnapshot), and pure functions that turn it into one tree per Mooring
// object, each with what it owns (Roots, ObjectTree). `kubectl mooring status` draws
// these trees (internal/plugin) and the portal's object pages show them
// (internal/portal/ui); neither owns them, so both import them from here. It talks to the
// API server only through the client it is given; it never imports the engine.
package objecttree
