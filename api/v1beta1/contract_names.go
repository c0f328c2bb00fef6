package v1beta1

// FinalSnapshotComponent is the app.kubernetes.io/component of a DatabaseCluster's final
// snapshot: its Job's pods and its own volume, which outlives the cluster. Not the
// cluster's component, so that neither the cluster's Services nor its data volume list
// pick them up.
const FinalSnapshotComponent = "final-snapshot"
