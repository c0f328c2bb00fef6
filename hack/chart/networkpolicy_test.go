package main

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestNetworkPoliciesOpenWhatThePodsServe renders the chart with networkPolicy on and
// checks each Deployment's pods against the policies that select them: every port a
// container serves (webhooks, metrics, probes, the portal) must be open to ingress, or the
// API server's webhook calls, the scraper or the kubelet's probes would be dropped; and a
// port nothing serves must not be open. With metrics off, their port is closed too.
func TestNetworkPoliciesOpenWhatThePodsServe(t *testing.T) {
	for name, tc := range map[string]struct {
		vals map[string]any
		// want is the ingress ports each Deployment's pods must have open, exactly.
		want map[string][]int32
	}{
		"metrics and portal": {
			vals: map[string]any{"networkPolicy": map[string]any{"enabled": true}, "portal": map[string]any{"enabled": true}},
			want: map[string][]int32{"mooring-controller-manager": {8081, 8443, 9443}, "mooring-portal": {8080, 9090}},
		},
		"no metrics": {
			vals: map[string]any{"networkPolicy": map[string]any{"enabled": true}, "metrics": map[string]any{"enabled": false}},
			want: map[string][]int32{"mooring-controller-manager": {8081, 9443}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := render(chartPath, namespace, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decode([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			var deployments []appsv1.Deployment
			var policies []networkingv1.NetworkPolicy
			for _, u := range objs {
				switch u.GetKind() {
				case "Deployment":
					var d appsv1.Deployment
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
						t.Fatal(err)
					}
					deployments = append(deployments, d)
				case "NetworkPolicy":
					var p networkingv1.NetworkPolicy
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
						t.Fatal(err)
					}
					policies = append(policies, p)
				}
			}
			if len(deployments) != len(tc.want) {
				t.Fatalf("want %d Deployments, rendered %d", len(tc.want), len(deployments))
			}
			for _, d := range deployments {
				var open []int32
				selected := false
				for _, p := range policies {
					sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
					if err != nil {
						t.Fatal(err)
					}
					if p.Namespace != d.Namespace || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
						continue
					}
					selected = true
					if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || len(p.Spec.Egress) == 0 {
						t.Errorf("%s: policy %s leaves egress open or shut: %v", d.Name, p.Name, p.Spec.Egress)
					}
					for _, r := range p.Spec.Ingress {
						for _, port := range r.Ports {
							open = append(open, port.Port.IntVal)
						}
					}
				}
				if !selected {
					t.Errorf("%s: no NetworkPolicy selects its pods", d.Name)
					continue
				}
				var served []int32
				for _, c := range d.Spec.Template.Spec.Containers {
					for _, p := range c.Ports {
						served = append(served, p.ContainerPort)
					}
					// Probes by number (8081); a named one is a container port above.
					for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
						if probe != nil && probe.HTTPGet != nil && probe.HTTPGet.Port.IntVal != 0 {
							served = append(served, probe.HTTPGet.Port.IntVal)
						}
					}
				}
				slices.Sort(open)
				for _, p := range served {
					if !slices.Contains(open, p) {
						t.Errorf("%s serves port %d, which its NetworkPolicy does not open (open: %v)", d.Name, p, open)
					}
				}
				if want := tc.want[d.Name]; !slices.Equal(open, want) {
					t.Errorf("%s: ingress open on %v, want %v", d.Name, open, want)
				}
			}
		})
	}
}
