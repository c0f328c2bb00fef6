package engine

import (
	"encoding/json"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// changedFields lists the paths of the fields of want that have holds with another value
// (or not at all), at most limit of them, in a stable order. It walks maps; a list that
// differs is reported as a whole (Mooring applies whole lists, and its elements' keys
// depend on the schema).
func changedFields(want, have map[string]any, limit int) [][]string {
	var out [][]string
	var walk func(w, h map[string]any, path []string)
	walk = func(w, h map[string]any, path []string) {
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if len(out) >= limit {
				return
			}
			wv := w[k]
			hv, found := h[k]
			if !found && isEmpty(wv) {
				continue
			}
			if found && isSubset(wv, hv) {
				continue
			}
			at := append(path[:len(path):len(path)], k)
			wm, wok := wv.(map[string]any)
			hm, hok := hv.(map[string]any)
			if wok && hok {
				walk(wm, hm, at)
				continue
			}
			out = append(out, at)
		}
	}
	walk(want, have, nil)
	return out
}

// otherManagers finds, for each field path, the field manager other than Mooring that
// owns it in managedFields (the latest writer if several do; through a subresource such
// as scale too), the zero fieldWriter when nobody owns it any more (it was removed), and
// leaves out the fields only Mooring owns.
func otherManagers(entries []metav1.ManagedFieldsEntry, paths map[fieldKey][]string) map[fieldKey]fieldWriter {
	type owner struct {
		writer fieldWriter
		at     metav1.Time
	}
	others := map[fieldKey]owner{}
	mine := map[fieldKey]bool{}
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &set); err != nil {
			continue
		}
		for k, path := range paths {
			if !ownsPath(set, path) {
				continue
			}
			if e.Manager == FieldOwner && e.Subresource == "" {
				mine[k] = true
				continue
			}
			var at metav1.Time
			if e.Time != nil {
				at = *e.Time
			}
			if prev, ok := others[k]; !ok || prev.at.Before(&at) {
				others[k] = owner{fieldWriter{e.Manager, e.Subresource}, at}
			}
		}
	}
	out := map[fieldKey]fieldWriter{}
	for k := range paths {
		switch o, ok := others[k]; {
		case ok:
			out[k] = o.writer
		case !mine[k]:
			out[k] = fieldWriter{}
		}
	}
	return out
}

// ownsPath reports whether the field set (managedFields' FieldsV1, {"f:spec":
// {"f:replicas": {}}}) holds the field at path or something under it. An empty set on
// the way is an atomic field owned whole.
func ownsPath(set map[string]any, path []string) bool {
	node := set
	for _, p := range path {
		next, ok := node["f:"+p].(map[string]any)
		if !ok {
			return false
		}
		if len(next) == 0 {
			return true
		}
		node = next
	}
	return true
}
