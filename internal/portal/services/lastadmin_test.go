package services

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// TestConcurrentRemovalsLeaveAnAdmin: every admin loses the role at once, each through
// withAnotherAdmin on the store's optimistic writes: an admin is always left, and
// exactly as many removals report success as Users lost the role.
func TestConcurrentRemovalsLeaveAnAdmin(t *testing.T) {
	ctx := context.Background()
	for _, admins := range []int{2, 3, 5} {
		for round := range 10 {
			m := newMemStore()
			s := &Users{store: m}
			var names []string
			for i := range admins {
				name := fmt.Sprintf("admin-%d", i)
				names = append(names, name)
				u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: name, Username: name, Role: portalv1alpha1.RoleAdmin}}
				if err := m.Create(ctx, u, "hash"); err != nil {
					t.Fatal(err)
				}
			}
			var won atomic.Int32
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, name := range names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					base, err := m.Get(ctx, name)
					if err != nil {
						t.Error(err)
						return
					}
					<-start
					want := base.DeepCopy()
					want.Spec.Role = portalv1alpha1.RoleNone
					if s.withAnotherAdmin(ctx, base, want, "demote") == nil {
						won.Add(1)
					}
				}()
			}
			close(start)
			wg.Wait()
			left := 0
			for _, name := range names {
				if u, err := m.Get(ctx, name); err != nil {
					t.Fatal(err)
				} else if u.Spec.Role == portalv1alpha1.RoleAdmin {
					left++
				}
			}
			if left == 0 || int(won.Load()) != admins-left {
				t.Fatalf("%d admins, round %d: %d removals succeeded and %d admins are left: want an admin left and one success per User that lost the role",
					admins, round, won.Load(), left)
			}
		}
	}
}
