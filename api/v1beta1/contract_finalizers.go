package v1beta1

// Finalizers of a DatabaseCluster; each starts with mooring.dev/ (api/v1's
// FinalizerPrefix), which is how the operator knows them for its own.
const (
	// FinalSnapshotFinalizer keeps a cluster with deletionPolicy Snapshot until its final
	// snapshot Job has succeeded.
	FinalSnapshotFinalizer = "mooring.dev/final-snapshot"
	// VolumesFinalizer holds a cluster with deletionPolicy Retain or Delete until its data
	// volumes are protected as the policy says. Delete needs it too: the policy may be
	// changed to Retain right before the deletion, faster than the finalizer could be
	// swapped.
	VolumesFinalizer = "mooring.dev/volumes"
)
