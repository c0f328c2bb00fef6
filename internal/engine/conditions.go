package engine

// The condition types, reasons and annotations the engine sets and honours are part of
// the API contract, declared once in api/v1 (contract_conditions.go,
// contract_annotations.go) for the programs that read them too.

// fieldOwnershipCreated is mooringv1.FieldOwnershipAnnotation's value on a created child.
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
