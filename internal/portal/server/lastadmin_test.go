package server_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// racingPortal is a portal without client-go's default 5 requests/s, which would space
// two concurrent requests' calls to the API server apart (and make each round of a race
// take seconds): the races are as tight as they get.
func racingPortal(t *testing.T) *portal {
	return newPortal(t, func(c *Config) {
		c.Rest = rest.CopyConfig(c.Rest)
		c.Rest.QPS, c.Rest.Burst = 1000, 1000
	})
}

// onlyAdmins takes the admin role from every User but keep (the first admin's too),
// and gives the first admin its role back when the test ends.
func onlyAdmins(t *testing.T, keep ...string) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		if err := setRole(context.Background(), "admin", portalv1alpha1.RoleAdmin); err != nil {
			t.Errorf("give the first admin its role back: %v", err)
		}
	})
	var l portalv1alpha1.UserList
	if err := admin.List(ctx, &l); err != nil {
		t.Fatal(err)
	}
	for _, u := range l.Items {
		if u.Spec.Role == portalv1alpha1.RoleAdmin && !slices.Contains(keep, u.Name) {
			if err := setRole(ctx, u.Name, portalv1alpha1.RoleNone); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// race sends a and b at the same moment and returns their answers.
func race(t *testing.T, p *portal, a, b func() (portaltest.Reply, error)) (ra, rb portaltest.Reply) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	run := func(f func() (portaltest.Reply, error), out *portaltest.Reply) {
		defer wg.Done()
		<-start
		r, err := f()
		if err != nil {
			t.Errorf("racing request: %v", err)
		}
		*out = r
	}
	wg.Add(2)
	go run(a, &ra)
	go run(b, &rb)
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ra, rb
}

// adminsAmong counts the admins among the Users named names (a deleted one is none).
func adminsAmong(t *testing.T, names ...string) int {
	t.Helper()
	n := 0
	for _, name := range names {
		var u portalv1alpha1.User
		err := admin.Get(context.Background(), client.ObjectKey{Name: name}, &u)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			t.Fatal(err)
		case u.Spec.Role == portalv1alpha1.RoleAdmin && u.DeletionTimestamp == nil:
			n++
		}
	}
	return n
}

// TestConcurrentDemotionsLeaveAnAdmin: two admins, the only two, each take the other's
// admin role at the same moment, round after round. At most one of them succeeds (the
// other is refused: 403 once its own role is gone, or 409), and an admin is always
// left. Before, each checked that another admin existed, saw the other, and wrote: both
// succeeded and the portal had no admin.
func TestConcurrentDemotionsLeaveAnAdmin(t *testing.T) {
	p := racingPortal(t)
	ctx := context.Background()
	a, apw := p.Register("race-a")
	b, bpw := p.Register("race-b")
	t.Cleanup(func() {
		for _, name := range []string{a.Username, b.Username} {
			if err := setRole(context.Background(), name, portalv1alpha1.RoleNone); err != nil {
				t.Errorf("take the admin role from %s: %v", name, err)
			}
		}
	})
	for _, name := range []string{a.Username, b.Username} {
		if err := setRole(ctx, name, portalv1alpha1.RoleAdmin); err != nil {
			t.Fatal(err)
		}
	}
	onlyAdmins(t, a.Username, b.Username)
	ta, tb := p.Login(a.Username, apw).AccessToken, p.Login(b.Username, bpw).AccessToken

	none := "none"
	demote := func(token, id string) func() (portaltest.Reply, error) {
		return func() (portaltest.Reply, error) {
			return p.TryDo("PATCH", "/api/v1/users/"+id, token, models.UpdateUserRequest{Role: &none})
		}
	}
	const rounds = 50
	won := 0
	for round := range rounds {
		for _, name := range []string{a.Username, b.Username} {
			if err := setRole(ctx, name, portalv1alpha1.RoleAdmin); err != nil {
				t.Fatal(err)
			}
		}
		ra, rb := race(t, p, demote(ta, b.ID), demote(tb, a.ID)) // each takes the other's role
		if left := adminsAmong(t, a.Username, b.Username); left == 0 || ra.Status == http.StatusOK && rb.Status == http.StatusOK {
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

// TestConcurrentDeletionsLeaveAnAdmin: the same race with deletes: two admins, the only
// two, delete each other at the same moment; at most one User goes, and an admin is
// left.
func TestConcurrentDeletionsLeaveAnAdmin(t *testing.T) {
	p := racingPortal(t)
	ctx := context.Background()
	onlyAdmins(t)
	const rounds = 10
	won := 0
	for round := range rounds {
		c, cpw := p.Register("delete-race-c")
		d, dpw := p.Register("delete-race-d")
		for _, name := range []string{c.Username, d.Username} {
			if err := setRole(ctx, name, portalv1alpha1.RoleAdmin); err != nil {
				t.Fatal(err)
			}
		}
		tc, td := p.Login(c.Username, cpw).AccessToken, p.Login(d.Username, dpw).AccessToken
		del := func(token, id string) func() (portaltest.Reply, error) {
			return func() (portaltest.Reply, error) { return p.TryDo("DELETE", "/api/v1/users/"+id, token, nil) }
		}
		rc, rd := race(t, p, del(tc, d.ID), del(td, c.ID))
		if left := adminsAmong(t, c.Username, d.Username); left == 0 || rc.Status == http.StatusNoContent && rd.Status == http.StatusNoContent {
			t.Fatalf("round %d: c deleting d answered %d, d deleting c %d, and %d admins are left: want at most one deletion and an admin left\n%s\n%s",
				round, rc.Status, rd.Status, left, rc.Body, rd.Body)
		}
		for _, r := range []portaltest.Reply{rc, rd} {
			switch r.Status {
			case http.StatusNoContent:
				won++
			case http.StatusForbidden, http.StatusConflict:
			default:
				t.Fatalf("round %d: want 204, 403 or 409, got %d: %s", round, r.Status, r.Body)
			}
		}
		// The survivors of this round make way for the next pair.
		for _, name := range []string{c.Username, d.Username} {
			if err := setRole(ctx, name, portalv1alpha1.RoleNone); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	if won == 0 {
		t.Fatalf("no deletion succeeded in %d rounds: want one of each pair to win at least sometimes", rounds)
	}
}
