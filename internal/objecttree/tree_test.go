package objecttree

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// now is the clock of the trees built in this package's tests.
var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// An autoscaled App's pods are measured against what the operator reports it wants (the
// autoscaler's count), not the spec.replicas the autoscaler overrides.
func TestAppDesiredReplicas(t *testing.T) {
	cases := []struct {
		name    string
		spec    *int32
		desired int32
		want    int32
	}{
		{"no status yet, spec unset", nil, 0, 1},
		{"no status yet, spec 3", ptr.To[int32](3), 0, 3},
		{"autoscaled to 4 over spec 1", ptr.To[int32](1), 4, 4},
	}
	for _, c := range cases {
		a := &mooringv1.App{Spec: mooringv1.AppSpec{Replicas: c.spec}, Status: mooringv1.AppStatus{DesiredReplicas: c.desired}}
		if got := appDesiredReplicas(a); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}
