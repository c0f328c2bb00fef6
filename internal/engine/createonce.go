package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// CreateOnce creates obj unless an object of its name exists, and never updates it: for
// what is generated once and must then stay as it was made (a Secret with a random
// password: a new one would not be the database's) and for one-shot Jobs, which run once
// per name. It reports created=false, without an error, when the object exists, even if
// the cache has not seen it yet; obj is then left as given. On a create, obj holds the
// created object.
//
// Like Apply's children, obj gets the reconciled object's namespace, standard labels and
// controller reference, and an existing object of that name it does not control is an
// error. With Unowned, obj is created as given (namespace aside), and telling an
// existing object from somebody else's is the caller's business.
func (s *Scope[T]) CreateOnce(ctx context.Context, obj client.Object, opts ...WriteOption) (created bool, err error) {
	o := writeOptionsOf(opts)
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return false, err
	}
	if o.unowned {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		if obj.GetNamespace() == "" {
			obj.SetNamespace(s.Object.GetNamespace())
		}
	} else {
		s.prepare(obj, gvk)
	}
	s.writes.expectCreate(gvk, obj)
	err = s.Client.Create(ctx, obj, client.FieldOwner(FieldOwner))
	if err != nil {
		s.writes.forget(gvk, obj)
	}
	switch {
	case apierrors.IsAlreadyExists(err):
		if o.unowned {
			return false, nil
		}
		return false, s.checkNotForeign(ctx, obj, gvk)
	case err != nil:
		return false, fmt.Errorf("create %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	s.wrote(gvk, obj, changeCreated, o)
	return true, nil
}
