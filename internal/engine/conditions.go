package engine

// Condition types every kind shares.
const (
	// ConditionReady is True when the object does what its spec asks.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the object's children move towards the spec.
	ConditionProgressing = "Progressing"
	// ConditionPaused is True while the pause annotation stops reconciliation.
	ConditionPaused = "Paused"
	// ConditionContested is True while another writer keeps changing a field of a child
	// that Mooring sets; its message names the field, the other field manager and how
	// often it changed it (contested.go).
	ConditionContested = "Contested"
)

// Condition reasons the engine itself sets; kinds add their own in their packages.
const (
	// ReasonInvalidSpec: Validate rejected the spec.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonReconcileError: syncing failed; the message has the error, the engine retries.
	ReasonReconcileError = "ReconcileError"
	// ReasonPaused: the object carries the pause annotation.
	ReasonPaused = "PausedByAnnotation"
	// ReasonDeleting: the object is being deleted and its finalizer has work left.
	ReasonDeleting = "Deleting"
	// ReasonOtherWriter: another field manager changes a child's field Mooring sets.
	ReasonOtherWriter = "OtherWriter"
)

// Annotations understood by the engine.
const (
	// PausedAnnotation set to "true" stops all changes to the object's children.
	PausedAnnotation = "mooring.dev/paused"
	// ReconcileRequestedAnnotation asks for a reconcile now (kubectl mooring reconcile sets
	// it to the time of the request). Nothing reads its value: like the pause switch, a
	// changed annotation passes the For() predicate, and that is the whole mechanism.
	ReconcileRequestedAnnotation = "mooring.dev/reconcile-requested-at"
	// SpecHashAnnotation on a child holds a hash of what Mooring last applied to it, so a
	// spec change (including a removed field) is noticed without a server round trip.
	SpecHashAnnotation = "mooring.dev/spec-hash"
	// FieldOwnershipAnnotation marks a child Mooring created with a plain create, whose
	// fields are therefore recorded under an Update entry of managedFields; the next apply
	// converts that entry into Mooring's Apply entry and removes the annotation (create.go).
	FieldOwnershipAnnotation = "mooring.dev/field-ownership"
)

// fieldOwnershipCreated is FieldOwnershipAnnotation's value on a created child.
const fieldOwnershipCreated = "created"

// Event reasons (CamelCase, as kubectl shows them).
const (
	EventCreated        = "Created"
	EventUpdated        = "Updated"
	EventDeleted        = "Deleted"
	EventReconcileError = "ReconcileError"
	EventInvalidSpec    = "InvalidSpec"
	EventPaused         = "Paused"
	EventFinalizing     = "Finalizing"
	// EventContestedField: once per backoff window of a field another writer keeps
	// changing (contested.go).
	EventContestedField = "ContestedField"
)
