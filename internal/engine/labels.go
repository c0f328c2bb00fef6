package engine

// FieldOwner is the server-side apply field manager for everything Mooring writes.
const FieldOwner = "mooring"

// Labels every child carries. The cache selects on ManagedByLabel, so a child without it
// is invisible to Mooring; the engine adds these labels to every child it applies.
const (
	NameLabel      = "app.kubernetes.io/name"
	InstanceLabel  = "app.kubernetes.io/instance"
	ComponentLabel = "app.kubernetes.io/component"
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "mooring"
)

// SelectorLabels are the labels that select the pods of one object of one kind. The
// component keeps an App and a CacheInstance of the same name from selecting each other's
// pods.
func SelectorLabels(component, name string) map[string]string {
	return map[string]string{
		NameLabel:      name,
		InstanceLabel:  name,
		ComponentLabel: component,
	}
}

// Labels are SelectorLabels plus the managed-by label: what every child carries.
func Labels(component, name string) map[string]string {
	l := SelectorLabels(component, name)
	l[ManagedByLabel] = ManagedBy
	return l
}
