package services

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/models"
)

// newLockoutUsers is a Users over a memStore holding one user, "ann", whose password
// is right.
func newLockoutUsers(t *testing.T, threshold int32) (*Users, *memStore) {
	t.Helper()
	m := newMemStore()
	hash, err := auth.HashPassword(context.Background(), "the right password")
	if err != nil {
		t.Fatal(err)
	}
	u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "id-ann", Username: "ann"}}
	if err := m.Create(context.Background(), u, hash); err != nil {
		t.Fatal(err)
	}
	return NewUsers(UsersOptions{Store: m, Lockout: LockoutPolicy{Threshold: threshold, Base: time.Minute, Max: time.Hour}}), m
}

// TestWrongCurrentPasswordCountsTowardsLockout: guessing the current password on a
// password change (say with a stolen access token) counts like a failed login and
// locks the account the same way.
func TestWrongCurrentPasswordCountsTowardsLockout(t *testing.T) {
	s, m := newLockoutUsers(t, 3)
	ctx := context.Background()
	change := func(current string) error {
		u, err := m.Get(ctx, "ann")
		if err != nil {
			t.Fatal(err)
		}
		pw := "a brand new password"
		_, err = s.UpdateMe(ctx, &Caller{User: u}, models.UpdateMeRequest{Password: &pw, CurrentPassword: &current})
		return err
	}
	for i := range 3 {
		var se *Error
		if err := change("a wrong guess"); !errors.As(err, &se) || se.Kind != KindForbidden {
			t.Fatalf("guess %d: want forbidden, got %v", i+1, err)
		}
	}
	u, _ := m.Get(ctx, "ann")
	if u.Status.FailedLogins != 3 || !lockedFor(u, clientOf(ctx), time.Now()) {
		t.Fatalf("after 3 wrong current passwords want 3 failures and a lock, got %d, locks %+v", u.Status.FailedLogins, u.Status.ClientLockouts)
	}
	if err := change("the right password"); err == nil {
		t.Fatal("a locked account changed its password")
	}
}

// TestFailedLoginsSurviveWriteConflicts: failed logins counted at once, by many
// requests or replicas, all land, even when other writers keep winning for a while.
func TestFailedLoginsSurviveWriteConflicts(t *testing.T) {
	s, m := newLockoutUsers(t, 1000)
	ctx := context.Background()
	m.conflicts = 8 // other replicas win the next writes
	const failures = 20
	var wg sync.WaitGroup
	for range failures {
		wg.Go(func() { s.recordFailure(ctx, "ann", clientOf(ctx)) })
	}
	wg.Wait()
	if u, _ := m.Get(ctx, "ann"); u.Status.FailedLogins != failures {
		t.Fatalf("%d failed logins recorded at once under write conflicts, %d counted", failures, u.Status.FailedLogins)
	}
}
