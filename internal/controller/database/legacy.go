package database

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

// isBitnamiStatefulSet tells a StatefulSet of a release before the instance manager: its
// pods run a Bitnami image or its entrypoint. Such a cluster's data directory is in the
// Bitnami layout (/bitnami/<engine>/data, user 1001), which the new pods would neither
// find nor be allowed to write: rolling it onto the new template would start an empty
// database beside the owner's data. So it is kept as it is, and its owner moves it
// (docs/databases.md, "Clusters made before the instance manager").
func isBitnamiStatefulSet(sts *appsv1.StatefulSet) bool {
	for _, c := range sts.Spec.Template.Spec.Containers {
		if strings.Contains(c.Image, "bitnami/") || strings.Contains(strings.Join(c.Command, " "), "/opt/bitnami/") {
			return true
		}
	}
	return false
}

// legacyMessage says how to move a Bitnami-era cluster.
func legacyMessage(db *v1beta1.DatabaseCluster) string {
	return "This cluster was created by a Mooring release that ran the Bitnami images, which Docker Hub no longer serves; " +
		"Mooring keeps its StatefulSet " + db.Name + " as it is (pods that are running keep running; a pod that must pull its image again cannot start). " +
		"To move: take a Backup of it, create a new DatabaseCluster with spec.bootstrap.backup naming that Backup, " +
		"then point your Apps' bindings at the new cluster and delete this one."
}

// keepLegacy reports the kept StatefulSet's state and MigrationNeeded, with one Warning
// event when the condition first appears.
func keepLegacy(s *engine.Scope[*v1beta1.DatabaseCluster], live *appsv1.StatefulSet) {
	db := s.Object
	msg := legacyMessage(db)
	if !engine.HasCondition(db, v1beta1.ConditionMigrationNeeded, metav1.ConditionTrue, v1beta1.ReasonBitnamiLayout) {
		s.Event(corev1.EventTypeWarning, v1beta1.ReasonBitnamiLayout, "Migrate", msg)
	}
	engine.SetCondition(db, v1beta1.ConditionMigrationNeeded, metav1.ConditionTrue, v1beta1.ReasonBitnamiLayout, msg)
	deriveStatus(db, live, true)
}
