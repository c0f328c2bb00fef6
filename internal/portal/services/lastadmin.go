package services

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/store"
)

// WitnessAnnotation is written on an admin's User to vouch, at that resourceVersion,
// that it was still an admin while another admin lost the role (withAnotherAdmin); its
// value is a fresh id each time, so the write always changes the object.
const WitnessAnnotation = "portal.mooring.dev/admin-witness"

// witnessAttempts bounds how often withAnotherAdmin tries before it gives up with a
// conflict for the caller to retry.
const witnessAttempts = 6

// witnessPause is how long withAnotherAdmin waits before its attempt n (from 1) after
// a write lost a race: jittered and growing, and four times as long for the side that
// yields. Two admins demoting each other at once each vouch with their own User,
// which the other is about to write, so both writes fail; taking turns by name (the
// removal of the name that sorts first goes on) lets one through on the next attempt,
// where equal pauses would let them collide again.
func witnessPause(n int, yield bool) time.Duration {
	d := 50 * time.Millisecond << min(n-1, 4)
	if yield {
		d *= 4
	}
	return wait.Jitter(d, 0.5)
}

// withAnotherAdmin writes want, which is base (a User read as an admin) with the admin
// role taken away (verb says how), only while another admin is left, and stays right
// when admins lose the role concurrently, on any replica: two admins taking each
// other's role at once cannot both succeed.
//
// Checking that another admin exists and then writing is not enough: both removals see
// the other admin and both write. So the check is made a write: the other admin (the
// witness) is updated at the resourceVersion it was seen at, and then the User losing
// the role at the resourceVersion it was read at, before the witness was seen; the API
// server refuses either write when its object changed meanwhile. Two removals that
// vouch with each other's Users cannot both get through: each writes the object the
// other writes, at the same resourceVersion. Followed along any chain of concurrent
// removals, the last one to write would have been refused, so an admin is always left.
// It takes no lock and no clock, and a portal stopped half-way leaves nothing to clean
// up (the witness's annotation is all it wrote).
//
// When the User changed since it was read but its spec did not (a login, a refresh, a
// witness's annotation), the change is made again on the fresh User after a pause; a
// changed spec is a conflict for the caller to resolve. want is updated in place.
func (s *Users) withAnotherAdmin(ctx context.Context, base, want *portalv1alpha1.User, verb string) error {
	yield := false
	for attempt := range witnessAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(witnessPause(attempt, yield)):
			}
			fresh, err := s.store.Get(ctx, base.Name)
			if err != nil {
				return err
			}
			if fresh.UID != base.UID || !equality.Semantic.DeepEqual(fresh.Spec, base.Spec) {
				return fmt.Errorf("%s changed since it was read: %w", base.Name, store.ErrConflict)
			}
			spec := want.Spec
			*want = *fresh
			want.Spec = spec
		}
		us, err := s.store.List(ctx)
		if err != nil {
			return err
		}
		var witness *portalv1alpha1.User
		for i := range us {
			if us[i].Name != want.Name && us[i].Spec.Role == portalv1alpha1.RoleAdmin {
				witness = &us[i]
				break
			}
		}
		if witness == nil {
			return &Error{Kind: KindConflict, Message: fmt.Sprintf("cannot %s %s: it is the last admin; make another user an admin first", verb, want.Spec.Username),
				Fields: []models.FieldError{field("role", "the last admin keeps the admin role")}}
		}
		if witness.Annotations == nil {
			witness.Annotations = map[string]string{}
		}
		witness.Annotations[WitnessAnnotation] = uuid.NewString()
		err = s.store.Update(ctx, witness)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			yield = false // the witness changed (maybe lost the role) since it was seen: look again
			continue
		} else if err != nil {
			return fmt.Errorf("vouch for another admin before %s loses the admin role: %w", want.Name, err)
		}
		err = s.store.Update(ctx, want)
		if errors.Is(err, store.ErrConflict) {
			// Most likely another removal vouched with want's User: the removal of the
			// name that sorts first goes on, the other waits for it.
			yield = want.Name > witness.Name
			continue
		}
		return err
	}
	return fmt.Errorf("take the admin role from %s: other writes kept winning: %w", want.Name, store.ErrConflict)
}
