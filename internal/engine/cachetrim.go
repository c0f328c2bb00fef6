package engine

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The cache holds children trimmed to what Mooring reads (identity, labels, annotations,
// owner references, generation, the status fields a kind derives its status from): a
// Deployment's pod template alone is most of its size, and Mooring compares it only to
// repair a change nobody asked for. What the trim drops is summarised in one cache-only
// annotation, the content hash: a hash of everything the child holds outside its metadata
// and status (spec, data), computed from the full object the watch delivered, before it
// is trimmed. Any change of those fields, by anybody, changes the hash.
//
// Apply then trusts a trimmed child without reading it only when this process has seen
// it match the desired object (trust.go): the spec-hash annotation is the desired
// object's, and the content hash is the one it had when Mooring last wrote it or last read
// it whole and found it matching. Anything else (a hand edit or removal of a field, a
// removed or forged spec-hash annotation, a process that has just started) costs one read
// past the cache, and the child is compared whole as before: repaired if it differs,
// trusted from then on if not. Reads, not writes: a converged cluster still costs no
// writes, idle or after a restart.

// ContentHashAnnotation holds, on a child in the cache only (never on the API server),
// the content hash of the child as the watch delivered it (ContentHash).
const ContentHashAnnotation = "cache.mooring.dev/content-hash"

// lastAppliedAnnotation is kubectl's client-side apply record: often the largest field of
// an object someone applied by hand, and never read by Mooring.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// ContentHash hashes what obj holds outside its type, metadata and status: the spec, a
// ConfigMap's data, a Secret's type. Equal contents hash equally, however the object was
// decoded (encoding/json sorts map keys).
func ContentHash(obj client.Object) (uint64, error) {
	h := fnv.New64a()
	enc := json.NewEncoder(h)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		for _, k := range slices.Sorted(maps.Keys(u.Object)) {
			if k == "apiVersion" || k == "kind" || k == "metadata" || k == "status" {
				continue
			}
			h.Write([]byte(k)) //nolint:errcheck // a hash.Hash never fails
			if err := enc.Encode(u.Object[k]); err != nil {
				return 0, err
			}
		}
		return h.Sum64(), nil
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return 0, fmt.Errorf("content hash of %T: not a pointer to a struct", obj)
	}
	v = v.Elem()
	for i := 0; i < v.NumField(); i++ {
		switch name := v.Type().Field(i).Name; name {
		case "TypeMeta", "ObjectMeta", "Status":
		default:
			h.Write([]byte(name)) //nolint:errcheck // a hash.Hash never fails
			if err := enc.Encode(v.Field(i).Interface()); err != nil {
				return 0, err
			}
		}
	}
	return h.Sum64(), nil
}

// cachedContentHash is the content hash the trim left on a cached child; ok is false for
// an object that was not trimmed (a cache without Trim, or a read past the cache).
func cachedContentHash(obj client.Object) (hash uint64, ok bool) {
	s, ok := obj.GetAnnotations()[ContentHashAnnotation]
	if !ok {
		return 0, false
	}
	hash, err := strconv.ParseUint(s, 16, 64)
	return hash, err == nil
}

// Trim is the cache transform of a child kind: it records the object's content hash in
// ContentHashAnnotation, drops managedFields and kubectl's last-applied annotation, then
// lets keep reduce the object to what Mooring reads of it (keep changes obj in place;
// KeepStatus keeps the status alone). Objects of other types pass through with only the
// metadata cleaned.
func Trim[C client.Object](keep func(C)) toolscache.TransformFunc {
	return func(in any) (any, error) {
		obj, ok := in.(C)
		if !ok {
			return StripUnread(in)
		}
		hash, err := ContentHash(obj)
		if err != nil {
			return nil, err
		}
		if _, err := StripUnread(obj); err != nil {
			return nil, err
		}
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[ContentHashAnnotation] = strconv.FormatUint(hash, 16)
		obj.SetAnnotations(a)
		keep(obj)
		internMetadata(obj)
		return obj, nil
	}
}

// KeepStatus is Trim's keep for a kind of which Mooring reads the status alone: it zeroes
// every top-level field but the type, metadata and status.
func KeepStatus[C client.Object](obj C) {
	if u, ok := any(obj).(*unstructured.Unstructured); ok {
		for k := range u.Object {
			if k != "apiVersion" && k != "kind" && k != "metadata" && k != "status" {
				delete(u.Object, k)
			}
		}
		return
	}
	v := reflect.ValueOf(obj).Elem()
	for i := 0; i < v.NumField(); i++ {
		switch v.Type().Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
		default:
			v.Field(i).SetZero()
		}
	}
}

// StripUnread is the transform of every object Mooring caches that is not a trimmed
// child: it drops what Mooring never reads (managedFields and kubectl's last-applied
// annotation), which is often most of an object's size.
func StripUnread(in any) (any, error) {
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
