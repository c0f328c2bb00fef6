package services

import (
	"fmt"
	"testing"
	"time"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

func TestWithSessionDropsExpiredAndBoundsTheCount(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) portalv1alpha1.Session {
		return portalv1alpha1.Session{ID: fmt.Sprint(d), ExpiresAt: metav1Time(now.Add(d))}
	}
	tests := map[string]struct {
		have []portalv1alpha1.Session
		want []string // ids, in order
	}{
		"first login":     {want: []string{"new"}},
		"expired ones go": {have: []portalv1alpha1.Session{at(-time.Second), at(time.Hour), at(0)}, want: []string{"1h0m0s", "new"}},
		"the soonest to expire ends at the cap": {have: func() []portalv1alpha1.Session {
			var ss []portalv1alpha1.Session
			for i := MaxSessions; i > 0; i-- {
				ss = append(ss, at(time.Duration(i)*time.Minute))
			}
			return ss
		}(), want: func() []string {
			var ids []string
			for i := 2; i <= MaxSessions; i++ {
				ids = append(ids, fmt.Sprint(time.Duration(i)*time.Minute))
			}
			return append(ids, "new")
		}()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := withSession(tc.have, portalv1alpha1.Session{ID: "new", ExpiresAt: metav1Time(now.Add(24 * time.Hour))}, now)
			if len(got) > MaxSessions {
				t.Fatalf("%d sessions, more than %d", len(got), MaxSessions)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.want) {
				t.Fatalf("want %v, got %v", tc.want, ids)
			}
		})
	}
}
