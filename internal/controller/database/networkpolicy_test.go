package database

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/golden"
	"github.com/mooringhq/mooring/internal/engine"
)

// The NetworkPolicy's peers, against a golden file, and who it admits to the database
// port by their pods' labels: the cluster's pods and Jobs, its Backups' Jobs and the
// bound Apps' pods; not another cluster's pods, an unbound App's or another Backup's.
func TestNetworkPolicy(t *testing.T) {
	db := newDB(v1beta1.PostgreSQL, nil)
	np := NetworkPolicy(db, Clients{Apps: []string{"web", "api", "web"}, Backups: []string{"nightly"}})
	golden.JSON(t, filepath.Join("testdata", "networkpolicy.golden.json"), np)

	admitted := func(podLabels map[string]string) bool {
		for _, peer := range np.Spec.Ingress[0].From {
			if peer.NamespaceSelector == nil && labels.SelectorFromSet(peer.PodSelector.MatchLabels).Matches(labels.Set(podLabels)) {
				return true
			}
		}
		return false
	}
	app := func(name string) map[string]string { return engine.Labels(mooringv1.AppComponent, name) }
	for name, tc := range map[string]struct {
		pod  map[string]string
		want bool
	}{
		"a pod of the cluster":           {engine.Labels(Component, db.Name), true},
		"its credentials Job":            {engine.Labels(credentialsComponent, db.Name), true},
		"its restore Job":                {engine.Labels(restoreComponent, db.Name), true},
		"a Job of its Backup":            {engine.Labels(mooringv1.BackupComponent, "nightly"), true},
		"a bound App's pod":              {app("api"), true},
		"an unbound App's pod":           {app("other"), false},
		"another cluster's pod":          {engine.Labels(Component, "other"), false},
		"a Job of another Backup":        {engine.Labels(mooringv1.BackupComponent, "weekly"), false},
		"a pod without Mooring's labels": {map[string]string{"app": "debug"}, false},
	} {
		if got := admitted(tc.pod); got != tc.want {
			t.Errorf("%s (%v): admitted %v, want %v", name, tc.pod, got, tc.want)
		}
	}
	if len(np.Spec.Ingress) != 2 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 5432 || np.Spec.Ingress[1].From != nil {
		t.Errorf("ingress %+v: want the database port from the peers and the status port open", np.Spec.Ingress)
	}
}
