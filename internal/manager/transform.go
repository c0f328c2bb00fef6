package manager

import (
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// lastAppliedAnnotation is kubectl's client-side apply record: often the largest field of
// an object someone applied by hand, and never read by Mooring.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// stripUnread is the cache transform of every cached object: it drops what Mooring never
// reads (managedFields and kubectl's last-applied annotation), which is often most of an
// object's size. The engine compares only the fields it sets, so nothing it needs is lost.
var stripUnread toolscache.TransformFunc = func(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil
	}
	// Written only when set (kubernetes/kubernetes#124337, as in controller-runtime's
	// TransformStripManagedFields).
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	if a := obj.GetAnnotations(); a[lastAppliedAnnotation] != "" {
		delete(a, lastAppliedAnnotation)
		obj.SetAnnotations(a)
	}
	return in, nil
}
