package engine

import (
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
)

// Every write the engine makes when something changed (a child applied over a drift, a
// status written) is logged at debug level (V(1), --zap-log-level=debug) with what
// differed, so that a write nobody expected — one in the idle minute of the benchmark,
// say — names its cause in the log instead of only in a counter. It costs nothing unless
// that level is on: the differences are computed only then.

// maxLoggedDiffs bounds the differences one log line names.
const maxLoggedDiffs = 8

// statusDiffs names the fields of status that differ between before and after, as
// paths ("observedGeneration", "conditions[Ready].message"); conditions are matched by
// type, not position. At most limit are named.
func statusDiffs(before, after Object, limit int) []string {
	b, errB := statusMap(before)
	a, errA := statusMap(after)
	if errB != nil || errA != nil {
		return []string{fmt.Sprintf("status (not comparable: %v %v)", errB, errA)}
	}
	var out []string
	diffValues(b, a, "", &out, limit)
	return out
}

func statusMap(obj Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	s, _ := m["status"].(map[string]any)
	dropNulls(s)
	return s, nil
}

// diffValues appends to out the paths under at where a and b differ, at most limit.
func diffValues(a, b any, at string, out *[]string, limit int) {
	if len(*out) >= limit || reflect.DeepEqual(a, b) {
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]struct{}{}
		for k := range am {
			keys[k] = struct{}{}
		}
		for k := range bm {
			keys[k] = struct{}{}
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			diffValues(am[k], bm[k], join(at, k), out, limit)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok {
		if ak, bk := byType(al), byType(bl); ak != nil && bk != nil {
			// Conditions: by type, so that one added condition is not every one changed.
			diffValues(ak, bk, at, out, limit)
			return
		}
	}
	if a == nil {
		*out = append(*out, at+" (added)")
		return
	}
	if b == nil {
		*out = append(*out, at+" (removed)")
		return
	}
	*out = append(*out, at)
}

// byType indexes a list of maps with a "type" key (conditions) by it, as "[Type]"; nil
// when the list is not such a list.
func byType(l []any) map[string]any {
	m := make(map[string]any, len(l))
	for _, e := range l {
		em, ok := e.(map[string]any)
		t, tok := em["type"].(string)
		if !ok || !tok {
			return nil
		}
		m["["+t+"]"] = e
	}
	return m
}

func join(at, k string) string {
	switch {
	case at == "":
		return k
	case len(k) > 0 && k[0] == '[':
		return at + k
	default:
		return at + "." + k
	}
}

// formatPaths prints field paths as users read them.
func formatPaths(paths [][]string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = formatPath(p)
	}
	return out
}
