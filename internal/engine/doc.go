// Package engine is Mooring's one reconciler, generic over the kind.
//
// Every Mooring kind (App, CacheInstance, DatabaseCluster, Backup) plugs into the same
// skeleton through a Handler: the engine fetches the object, honours the pause annotation,
// adds and removes the kind's finalizer, validates, lets the handler sync its children
// through a Scope (a plain create for a missing child, server-side apply under one field
// owner for a changed one, nothing when the live child already matches), deletes children
// that are no longer desired, records one event for what changed, and writes status once,
// at the end, only when it changed. A converged object therefore costs no API writes, and
// a new one costs one write per child, one status write and one event
// (docs/performance.md). A field another writer keeps changing is restored with backoff
// and reported once per backoff window, in an event and the Contested condition
// (contested.go, docs/contested-fields.md).
//
// What a kind writes beyond its applied children goes through the scope too: CreateOnce
// for what is generated once (a Secret with a random password, a one-shot Job, whose
// outcome JobPhase reads), Patch for a field of an object Mooring does not apply whole,
// DeleteExact for a deletion of its own kind (writes.go). They are counted, tracked and
// reported like Apply's writes. A flow with several ways out is an ordered list of steps
// (RunSteps).
package engine
