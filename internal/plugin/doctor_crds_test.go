package plugin

import (
	"testing"
	"time"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// doctor expects the CRDs of this release: against config/crd's, installed in an API
// server, every kind of api/v1's list passes, with the versions it serves and stores.
func TestDoctorExpectsThisReleasesCRDs(t *testing.T) {
	c, _ := rolesCluster(t)
	got := checkCRDs(t.Context(), &doctorEnv{c: c, now: time.Now()})
	kinds := mooringv1.Kinds()
	if len(got) != len(kinds) {
		t.Fatalf("%d findings for %d kinds: %+v", len(got), len(kinds), got)
	}
	for i, k := range kinds {
		want := "crd " + k.Plural + ".mooring.dev"
		if got[i].Check != want || got[i].Verdict != Pass {
			t.Errorf("finding %d: %s %s %q, want %s to pass", i, got[i].Check, got[i].Verdict, got[i].Message, want)
		}
	}
}
