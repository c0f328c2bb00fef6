package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// toApplyMap turns a typed desired object into the map that is server-side applied.
// Typed structs serialise fields nobody set (creationTimestamp: null, status: {}); the
// nulls and the status are dropped so Mooring claims only what the builder set.
func toApplyMap(obj runtime.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	dropNulls(m)
	return m, nil
}

func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range t {
			dropNulls(e)
		}
	}
}

// specHash is a short, stable hash of what is applied; map keys are sorted by
// encoding/json, so equal objects hash equally.
func specHash(m map[string]any) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// isSubset reports whether every field of want is present in have with the same value.
// Fields only have holds (defaults filled in by the API server, status, fields of other
// managers) do not matter. Lists must have the same length and match element by element:
// a list Mooring applies is a list Mooring owns.
func isSubset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, found := h[k]
			if !found {
				// An empty map or list applied means "nothing here", which an absent field
				// also means.
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !isSubset(wv, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !isSubset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, have)
	}
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}
