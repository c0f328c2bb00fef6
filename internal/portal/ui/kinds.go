package ui

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// column is one column of a kind's table, as its printer columns make `kubectl get`
// show it.
type column struct {
	Header string
	Path   string
	// Date columns show an age ("5m") like kubectl.
	Date bool
}

// input is one field of a create or edit form.
type input struct {
	// Name is the form field's name; Path the object field it sets ("spec.replicas"),
	// which is also how the API server's errors name it.
	Name, Label, Path string
	// Type is text, number, textarea, select or env (a textarea of NAME=value lines).
	Type     string
	Options  []string
	Required bool
	Help     string
	// Value and Error are filled per request.
	Value, Error string
}

// kindSpec is how the UI shows and edits one Mooring kind.
type kindSpec struct {
	Resource, Kind, Title string
	Columns               []column
	Form                  []input
	// ReplicasPath is the field scaling sets; empty when the kind does not scale.
	ReplicasPath string
	// Editable kinds have an edit form (the create form without the name).
	Editable bool
}

var nameInput = input{Name: "name", Label: "Name", Path: "metadata.name", Type: "text", Required: true,
	Help: "Lower-case letters, digits and '-'."}

// kindUI is how each of api/v1's Kinds is shown, by its kind; kindSpecs adds the kind's
// names from api/v1 (a test checks that every kind has its entry).
var kindUI = map[string]*kindSpec{
	mooringv1.KindApp: {Title: "Apps", ReplicasPath: "spec.replicas", Editable: true,
		Columns: []column{{"Image", "spec.image", false}, {"Replicas", "status.desiredReplicas", false}, {"Available", "status.availableReplicas", false},
			{"Phase", "status.phase", false}, {"Age", "metadata.creationTimestamp", true}},
		Form: []input{nameInput,
			{Name: "image", Label: "Image", Path: "spec.image", Type: "text", Required: true, Help: "For example nginxinc/nginx-unprivileged:1.26. It must run as a non-root user."},
			{Name: "replicas", Label: "Replicas", Path: "spec.replicas", Type: "number", Value: "1"},
			{Name: "port", Label: "Port", Path: "spec.port", Type: "number", Help: "Exposed through a Service named like the App; empty for none."},
			{Name: "config", Label: "Config", Path: "spec.config", Type: "textarea", Help: "Passed to the container as APP_CONFIG."},
			{Name: "env", Label: "Environment", Path: "spec.env", Type: "env", Help: "One NAME=value per line."},
		}},
	mooringv1.KindCacheInstance: {Title: "Caches", ReplicasPath: "spec.replicas",
		Columns: []column{{"Engine", "spec.engine", false}, {"Replicas", "spec.replicas", false}, {"Memory", "spec.memoryMB", false},
			{"Available", "status.availableReplicas", false}, {"Phase", "status.phase", false}, {"Age", "metadata.creationTimestamp", true}},
		Form: []input{nameInput,
			{Name: "version", Label: "Version", Path: "spec.version", Type: "text", Help: "memcached version; empty for the default."},
			{Name: "replicas", Label: "Replicas", Path: "spec.replicas", Type: "number", Value: "1"},
			{Name: "memoryMB", Label: "Memory (MB per replica)", Path: "spec.memoryMB", Type: "number", Value: "64"},
		}},
	mooringv1.KindDatabaseCluster: {Title: "Databases", ReplicasPath: "spec.replicaCount",
		Columns: []column{{"Engine", "spec.engine", false}, {"Version", "spec.version", false}, {"Replicas", "spec.replicaCount", false},
			{"Ready", "status.readyReplicas", false}, {"Phase", "status.phase", false}, {"Age", "metadata.creationTimestamp", true}},
		Form: []input{nameInput,
			{Name: "engine", Label: "Engine", Path: "spec.engine", Type: "select", Options: []string{"postgresql", "mysql"}, Required: true},
			{Name: "version", Label: "Version", Path: "spec.version", Type: "text", Help: "Major version; empty for a current one."},
			{Name: "replicaCount", Label: "Replicas", Path: "spec.replicaCount", Type: "number", Value: "1"},
			{Name: "storage", Label: "Storage size", Path: "spec.storage.size", Type: "text", Help: "For example 1Gi; empty for the default."},
		}},
	mooringv1.KindBackup: {Title: "Backups",
		Columns: []column{{"Database", "spec.databaseRef.name", false}, {"Schedule", "spec.schedule", false},
			{"Last Success", "status.lastSuccessfulTime", true}, {"Phase", "status.phase", false}, {"Age", "metadata.creationTimestamp", true}},
		Form: []input{nameInput,
			{Name: "database", Label: "Database", Path: "spec.databaseRef.name", Type: "text", Required: true, Help: "A DatabaseCluster of this namespace."},
			{Name: "schedule", Label: "Schedule", Path: "spec.schedule", Type: "text", Required: true, Value: "@daily", Help: "Cron format, e.g. 0 3 * * * or @daily."},
		}},
}

// kindOrder is the order of the sections of a namespace page, api/v1's: the kinds'
// plurals, as the portal's API paths name them. kindSpecs is kindUI by plural, with each
// kind's names filled in from api/v1.
var kindOrder, kindSpecs = indexKinds()

func indexKinds() ([]string, map[string]*kindSpec) {
	var order []string
	specs := map[string]*kindSpec{}
	for _, k := range mooringv1.Kinds() {
		spec, ok := kindUI[k.Kind]
		if !ok {
			continue // not shown (TestEveryKindHasAView fails)
		}
		spec.Resource, spec.Kind = k.Plural, k.Kind
		order = append(order, k.Plural)
		specs[k.Plural] = spec
	}
	return order, specs
}

func splitPath(p string) []string { return strings.Split(p, ".") }

// fieldString is the value at path as text ("" when absent).
func fieldString(obj map[string]any, path string) string {
	v, ok, err := unstructured.NestedFieldNoCopy(obj, splitPath(path)...)
	if !ok || err != nil || v == nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

// formFields returns a fresh copy of the kind's form, without the name when editing,
// filled from obj when given.
func (k *kindSpec) formFields(obj map[string]any, editing bool) []input {
	var out []input
	for _, in := range k.Form {
		if editing && in.Path == "metadata.name" {
			continue
		}
		if obj != nil {
			in.Value = fieldString(obj, in.Path)
			if in.Type == "env" {
				in.Value = envText(obj)
			}
		}
		out = append(out, in)
	}
	return out
}

// envText shows the plain env entries of an App as NAME=value lines.
func envText(obj map[string]any) string {
	list, _, _ := unstructured.NestedSlice(obj, "spec", "env")
	var lines []string
	for _, e := range list {
		m, _ := e.(map[string]any)
		if _, from := m["valueFrom"]; from {
			continue // kept as is; the form shows plain values only
		}
		name, _ := m["name"].(string)
		value, _ := m["value"].(string)
		lines = append(lines, name+"="+value)
	}
	return strings.Join(lines, "\n")
}

// apply sets the form's values on obj: empty optional fields are removed, numbers must
// be whole numbers. It returns the errors of fields it could not read.
func apply(obj map[string]any, fields []input, values func(string) string) map[string]string {
	bad := map[string]string{}
	for _, f := range fields {
		v := strings.TrimSpace(values(f.Name))
		path := splitPath(f.Path)
		if f.Type == "textarea" {
			v = values(f.Name) // configs keep their whitespace
		}
		switch {
		case f.Type == "env":
			if err := setEnv(obj, v); err != nil {
				bad[f.Path] = err.Error()
			}
		case v == "":
			unstructured.RemoveNestedField(obj, path...)
		case f.Type == "number":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				bad[f.Path] = "must be a whole number"
				continue
			}
			_ = unstructured.SetNestedField(obj, n, path...)
		default:
			_ = unstructured.SetNestedField(obj, v, path...)
		}
	}
	return bad
}

// setEnv replaces the plain env entries of an App with the NAME=value lines of text,
// keeping entries that take their value from elsewhere (valueFrom), which the form
// does not show.
func setEnv(obj map[string]any, text string) error {
	old, _, _ := unstructured.NestedSlice(obj, "spec", "env")
	var env []any
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("line %d: write NAME=value", i+1)
		}
		name = strings.TrimSpace(name)
		if seen[name] {
			return fmt.Errorf("line %d: %s is given twice", i+1, name)
		}
		seen[name] = true
		env = append(env, map[string]any{"name": name, "value": value})
	}
	for _, e := range old {
		m, _ := e.(map[string]any)
		if name, _ := m["name"].(string); m["valueFrom"] != nil && !seen[name] {
			env = append(env, m)
		}
	}
	if len(env) == 0 {
		unstructured.RemoveNestedField(obj, "spec", "env")
		return nil
	}
	return unstructured.SetNestedSlice(obj, env, "spec", "env")
}

// fieldErrors attaches the errors of p (by field path) to the form's inputs and
// returns the ones no input shows.
func fieldErrors(fields []input, errs map[string]string) []string {
	var rest []string
	for path, msg := range errs {
		matched := false
		for i := range fields {
			p := fields[i].Path
			if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
				if fields[i].Error != "" {
					fields[i].Error += "; "
				}
				fields[i].Error += msg
				matched = true
				break
			}
		}
		if !matched {
			rest = append(rest, path+": "+msg)
		}
	}
	return rest
}
