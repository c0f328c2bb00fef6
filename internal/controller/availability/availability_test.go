package availability

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// The selectors of both defaults count the object's own pods and no other's: not those of
// another object of the kind, nor those of another kind's object with the same name.
func TestSelectorsSelectOnlyTheObjectsPods(t *testing.T) {
	pods := map[string]struct {
		labels map[string]string
		want   bool
	}{
		"the object's pod":                  {labels: engine.Labels(mooringv1.CacheInstanceComponent, "sessions"), want: true},
		"another cache's pod":               {labels: engine.Labels(mooringv1.CacheInstanceComponent, "carts"), want: false},
		"an App's pod of the same name":     {labels: engine.Labels(mooringv1.AppComponent, "sessions"), want: false},
		"a pod with only the name label":    {labels: map[string]string{mooringv1.NameLabel: "sessions"}, want: false},
		"a pod with another instance label": {labels: withInstance(engine.Labels(mooringv1.CacheInstanceComponent, "sessions"), "other"), want: false},
	}
	spread := SpreadOverNodes(mooringv1.CacheInstanceComponent, "sessions")
	pdb := DisruptionBudget(mooringv1.CacheInstanceComponent, "sessions")
	for name, tt := range pods {
		t.Run(name, func(t *testing.T) {
			for what, sel := range map[string]*metav1.LabelSelector{"spread": spread[0].LabelSelector, "budget": pdb.Spec.Selector} {
				s, err := metav1.LabelSelectorAsSelector(sel)
				if err != nil {
					t.Fatal(err)
				}
				if got := s.Matches(labels.Set(tt.labels)); got != tt.want {
					t.Errorf("%s selector %s matches %v: %v, want %v", what, s, tt.labels, got, tt.want)
				}
			}
		})
	}
}

func withInstance(l map[string]string, instance string) map[string]string {
	l[mooringv1.InstanceLabel] = instance
	return l
}

// Soft, one per node, on the hostname; one at a time for drains.
func TestDefaults(t *testing.T) {
	c := SpreadOverNodes(mooringv1.AppComponent, "web")
	if len(c) != 1 || c[0].TopologyKey != corev1.LabelHostname || c[0].MaxSkew != 1 || c[0].WhenUnsatisfiable != corev1.ScheduleAnyway {
		t.Errorf("spread %+v, want one ScheduleAnyway constraint of maxSkew 1 on %s", c, corev1.LabelHostname)
	}
	pdb := DisruptionBudget(mooringv1.AppComponent, "web")
	if pdb.Name != "web" || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil {
		t.Errorf("budget %s %+v, want web with maxUnavailable 1 and no minAvailable", pdb.Name, pdb.Spec)
	}
	if l := pdb.Labels; l[mooringv1.ManagedByLabel] != mooringv1.ManagedBy || l[mooringv1.InstanceLabel] != "web" {
		t.Errorf("budget labels %v, want Mooring's (the cache keeps only managed-by=mooring children)", l)
	}
}
