package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// setRole gives the User named name role as cluster-admin would with kubectl, past the
// portal's checks, retrying when the portal wrote the User meanwhile.
func setRole(ctx context.Context, name string, role portalv1alpha1.Role) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var u portalv1alpha1.User
		if err := admin.Get(ctx, client.ObjectKey{Name: name}, &u); err != nil {
			return err
		}
		if u.Spec.Role == role {
			return nil
		}
		u.Spec.Role = role
		return admin.Update(ctx, &u)
	})
}

// TestConcurrentDemotionsLeaveAnAdmin: two admins, the only two, each take the other's
// admin role at the same moment, round after round. At most one of them succeeds (the
// other is refused: 403 once its own role is gone, or 409), and an admin is always
// left. Before, each checked that another admin existed, saw the other, and wrote: both
// succeeded and the portal had no admin.
func TestConcurrentDemotionsLeaveAnAdmin(t *testing.T) {
	// Without client-go's default 5 requests/s, which would space the two demotions'
	// requests apart (and make each round take seconds), the race is as tight as it gets.
	p := newPortal(t, func(c *Config) {
		c.Rest = rest.CopyConfig(c.Rest)
		c.Rest.QPS, c.Rest.Burst = 1000, 1000
	})
	adm := p.adminToken()
	ctx := context.Background()
	a, apw := p.Register("race-a")
	b, bpw := p.Register("race-b")
	p.Grant(adm, a.ID, "admin")
	p.Grant(adm, b.ID, "admin")
	// a and b are to be the only admins: take the role from every other one (the first
	// admin's too, given back at the end).
	t.Cleanup(func() {
		for name, role := range map[string]portalv1alpha1.Role{"admin": portalv1alpha1.RoleAdmin, a.Username: portalv1alpha1.RoleNone, b.Username: portalv1alpha1.RoleNone} {
			if err := setRole(context.Background(), name, role); err != nil {
				t.Errorf("give %s the role %s back: %v", name, role, err)
			}
		}
	})
	var l portalv1alpha1.UserList
	if err := admin.List(ctx, &l); err != nil {
		t.Fatal(err)
	}
	for _, u := range l.Items {
		if u.Spec.Role == portalv1alpha1.RoleAdmin && u.Name != a.Username && u.Name != b.Username {
			if err := setRole(ctx, u.Name, portalv1alpha1.RoleNone); err != nil {
				t.Fatal(err)
			}
		}
	}
	ta, tb := p.Login(a.Username, apw).AccessToken, p.Login(b.Username, bpw).AccessToken

	none := "none"
	demote := func(token, id string, start <-chan struct{}, out *portaltest.Reply, wg *sync.WaitGroup) {
		defer wg.Done()
		<-start
		r, err := p.TryDo("PATCH", "/api/v1/users/"+id, token, models.UpdateUserRequest{Role: &none})
		if err != nil {
			t.Errorf("demote %s: %v", id, err)
		}
		*out = r
	}
	const rounds = 50
	won := 0
	for round := range rounds {
		for _, name := range []string{a.Username, b.Username} {
			if err := setRole(ctx, name, portalv1alpha1.RoleAdmin); err != nil {
				t.Fatal(err)
			}
		}
		var ra, rb portaltest.Reply
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go demote(ta, b.ID, start, &ra, &wg) // a takes b's role
		go demote(tb, a.ID, start, &rb, &wg) // b takes a's role
		close(start)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		left := 0
		for _, name := range []string{a.Username, b.Username} {
			var u portalv1alpha1.User
			if err := admin.Get(ctx, client.ObjectKey{Name: name}, &u); err != nil {
				t.Fatal(err)
			}
			if u.Spec.Role == portalv1alpha1.RoleAdmin {
				left++
			}
		}
		if left == 0 || ra.Status == http.StatusOK && rb.Status == http.StatusOK {
			t.Fatalf("round %d: a demoting b answered %d, b demoting a %d, and %d admins are left: want at most one demotion and an admin left\n%s\n%s",
				round, ra.Status, rb.Status, left, ra.Body, rb.Body)
		}
		for _, r := range []portaltest.Reply{ra, rb} {
			switch r.Status {
			case http.StatusOK:
				won++
			case http.StatusForbidden, http.StatusConflict:
			default:
				t.Fatalf("round %d: want 200, 403 or 409, got %d: %s", round, r.Status, r.Body)
			}
		}
	}
	// Both always refused would be safe but useless.
	if won == 0 {
		t.Fatalf("no demotion succeeded in %d rounds: want one of each pair to win at least sometimes", rounds)
	}
	t.Logf("%d of %d rounds had a winner", won, rounds)
}
