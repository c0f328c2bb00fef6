// Package engine is Mooring's one reconciler, generic over the kind.
//
// Every Mooring kind (App, CacheInstance, DatabaseCluster, Backup) plugs into the same
// skeleton through a Handler: the engine fetches the object, honours the pause annotation,
// adds and removes the kind's finalizer, validates, lets the handler sync its children
// through a Scope (server-side apply under one field owner, skipped when the live child
// already matches), deletes children that are no longer desired, and writes status once,
// at the end, only when it changed. A converged object therefore costs no API writes.
package engine
