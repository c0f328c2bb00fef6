package engine

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The decoder allocates every string of every object anew: the label and annotation
// keys Mooring puts on each child, the owner's kind and API version, the namespace. In a
// trimmed child those copies are a large part of what is left, so the trim replaces
// them with one shared copy. Only strings that repeat across objects are interned (keys,
// namespaces, the owner's type, the managed-by and component values); names and hashes,
// unique per object or owner, are left as they are.

// maxInterned bounds the table: past it, strings are kept as decoded. The strings
// interned are few (a handful of keys, one per namespace), so it is never reached in
// practice; the bound only keeps a cluster of odd labels from growing it forever.
const maxInterned = 1 << 14

var interned = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

// intern returns the shared copy of s.
func intern(s string) string {
	interned.RLock()
	v, ok := interned.m[s]
	interned.RUnlock()
	if ok {
		return v
	}
	interned.Lock()
	defer interned.Unlock()
	if v, ok := interned.m[s]; ok {
		return v
	}
	if len(interned.m) >= maxInterned {
		return s
	}
	interned.m[s] = s
	return s
}

// internMetadata shares the strings of obj's metadata that repeat across objects; its
// labels and annotations get maps of the exact size.
func internMetadata(obj client.Object) {
	obj.SetNamespace(intern(obj.GetNamespace()))
	if l := obj.GetLabels(); l != nil {
		out := make(map[string]string, len(l))
		for k, v := range l {
			// Of the values, those of managed-by and component repeat on every child;
			// the others name one owner and are left alone.
			if k == mooringv1.ManagedByLabel || k == mooringv1.ComponentLabel {
				v = intern(v)
			}
			out[intern(k)] = v
		}
		obj.SetLabels(out)
	}
	if a := obj.GetAnnotations(); a != nil {
		out := make(map[string]string, len(a))
		for k, v := range a {
			out[intern(k)] = v
		}
		obj.SetAnnotations(out)
	}
	if refs := obj.GetOwnerReferences(); refs != nil {
		for i := range refs {
			refs[i].APIVersion = intern(refs[i].APIVersion)
			refs[i].Kind = intern(refs[i].Kind)
		}
	}
}
