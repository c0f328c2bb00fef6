package engine

import (
	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// FieldOwner is the server-side apply field manager for everything Mooring writes.
const FieldOwner = "mooring"

// SelectorLabels are the labels that select the pods of one object of one kind. The
// component keeps an App and a CacheInstance of the same name from selecting each other's
// pods.
func SelectorLabels(component, name string) map[string]string {
	return map[string]string{
		mooringv1.NameLabel:      name,
		mooringv1.InstanceLabel:  name,
		mooringv1.ComponentLabel: component,
	}
}

// Labels are SelectorLabels plus the managed-by label: what every child carries.
func Labels(component, name string) map[string]string {
	l := SelectorLabels(component, name)
	l[mooringv1.ManagedByLabel] = mooringv1.ManagedBy
	return l
}
