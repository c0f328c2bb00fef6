package database

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

// deriveStatus sets the cluster's status from its StatefulSet (nil while it is being
// created or re-created) and whether the credentials are there.
func deriveStatus(db *v1beta1.DatabaseCluster, sts *appsv1.StatefulSet, secretReady bool) {
	want := max(db.Spec.ReplicaCount, 1)
	db.Status.Selector = labels.SelectorFromSet(engine.SelectorLabels(Component, db.Name)).String()
	db.Status.PrimaryEndpoint = PrimaryEndpoint(db)
	var ready, replicas, updated int32
	observed := false
	if sts != nil {
		ready, replicas, updated = sts.Status.ReadyReplicas, sts.Status.Replicas, sts.Status.UpdatedReplicas
		observed = sts.Status.ObservedGeneration >= sts.Generation
	}
	db.Status.ReadyReplicas, db.Status.Replicas = ready, replicas
	complete := observed && ready == want && replicas == want && updated == want

	// The phase describes the pods; a missing or incomplete Secret shows in SecretReady
	// and Ready, not as a Pending cluster whose pods are in fact serving.
	switch {
	case complete:
		db.Status.Phase = v1beta1.DatabaseRunning
		engine.SetCondition(db, mooringv1.ConditionReady, metav1.ConditionTrue, v1beta1.ReasonAllReplicasReady,
			fmt.Sprintf("%d of %d database pods ready; the primary is %s.", ready, want, PrimaryPodName(db)))
	case ready == 0:
		db.Status.Phase = v1beta1.DatabasePending
		engine.SetCondition(db, mooringv1.ConditionReady, metav1.ConditionFalse, v1beta1.ReasonReplicasNotReady,
			fmt.Sprintf("No database pod ready yet (0 of %d).", want))
	default:
		db.Status.Phase = v1beta1.DatabaseNotReady
		engine.SetCondition(db, mooringv1.ConditionReady, metav1.ConditionFalse, v1beta1.ReasonReplicasNotReady,
			fmt.Sprintf("%d of %d database pods ready.", ready, want))
	}
	if !secretReady {
		engine.SetCondition(db, mooringv1.ConditionReady, metav1.ConditionFalse, v1beta1.ReasonSecretNotFound, fmt.Sprintf(
			"Waiting for the credentials Secret (the SecretReady condition says which); %d of %d database pods ready.", ready, want))
	}
	if complete {
		engine.SetCondition(db, mooringv1.ConditionProgressing, metav1.ConditionFalse, v1beta1.ReasonRolloutComplete, "All pods run the current spec.")
	} else {
		engine.SetCondition(db, mooringv1.ConditionProgressing, metav1.ConditionTrue, v1beta1.ReasonRollingOut,
			fmt.Sprintf("%d of %d pods updated, %d ready.", updated, want, ready))
	}
}
