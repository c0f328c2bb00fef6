package engine

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object is a Mooring kind as the engine sees it: an API object whose status has
// conditions, an observed generation and a phase.
type Object interface {
	client.Object
	// StatusConditions returns the status conditions for the engine to update in place.
	StatusConditions() *[]metav1.Condition
	// SetObservedGeneration records the generation that was reconciled successfully.
	SetObservedGeneration(generation int64)
	// SetErrorPhase puts the kind's phase into its error value after a failed reconcile.
	SetErrorPhase()
}

// Handler is what a kind supplies to the engine: everything that is its own.
type Handler[T Object] interface {
	// NewObject returns an empty object of the kind, for the engine to read into.
	NewObject() T
	// Validate reports what admission could not reject. An error here is not retried:
	// the object gets Ready=False with reason InvalidSpec and a Warning event, and is
	// reconciled again when it changes.
	Validate(obj T) error
	// Sync makes the world match obj: it applies the desired children through the scope
	// and derives obj's status (but not observedGeneration, which the engine owns).
	Sync(ctx context.Context, s *Scope[T]) (ctrl.Result, error)
}

// Finalizing is implemented by handlers whose kind needs clean-up before deletion.
type Finalizing[T Object] interface {
	// Finalizer names the finalizer obj needs, or "" when it needs none (it may depend on
	// the spec, e.g. a deletion policy). The engine adds it while obj lives and removes it
	// when it is no longer needed.
	Finalizer(obj T) string
	// Finalize does the clean-up for a deleted obj. It returns done=true when the
	// finalizer may be removed; otherwise it sets a condition saying what deletion waits
	// for and the engine requeues or waits for a watch event.
	Finalize(ctx context.Context, s *Scope[T]) (done bool, res ctrl.Result, err error)
}

// ValidationError marks an error as a problem with the spec rather than with the cluster:
// retrying will not fix it, the user must.
type ValidationError struct {
	// Field is the path of the offending field, e.g. "spec.secretName".
	Field string
	// Message says what is wrong with it.
	Message string
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Message }
