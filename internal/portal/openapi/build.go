package openapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The placeholders openapi.yaml writes where a kind goes: paths with {kind} are written
// once, for any kind, and Build writes them out for each kind with its own schemas.
const (
	kindSegment     = "{kind}"
	kindParameter   = "#/components/parameters/Kind"
	objectSchema    = "#/components/schemas/KubernetesObject"
	inputSchema     = "#/components/schemas/KubernetesObjectInput"
	listSchema      = "#/components/schemas/KubernetesList"
	schemasPrefix   = "#/components/schemas/"
	resourceOpWord  = "Resource"
	resourcesOpWord = "Resources"
)

// CRDFile is the file in config/crd/bases holding a kind's CRD, as controller-gen names it.
func CRDFile(k mooringv1.KindInfo) string {
	return mooringv1.GroupVersion.Group + "_" + k.Plural + ".yaml"
}

// Build makes the served document from the written one (source, openapi.yaml) and the
// kinds' CRDs (crds, by CRDFile): each path with {kind} becomes one path per kind, whose
// operations take and return that kind, and each kind's spec and status schemas are the
// CRD's, at the version Mooring serves. The result is indented JSON, the same bytes for
// the same input.
func Build(source []byte, crds map[string][]byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(source, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	schemas, ok := lookup(doc, "components", "schemas").(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi.yaml has no components.schemas")
	}
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi.yaml has no paths")
	}
	kinds := mooringv1.Kinds()
	for _, k := range kinds {
		data, ok := crds[CRDFile(k)]
		if !ok {
			return nil, fmt.Errorf("no CRD %s for %s", CRDFile(k), k.Kind)
		}
		s, err := kindSchemas(k, data)
		if err != nil {
			return nil, err
		}
		for name, schema := range s {
			if _, dup := schemas[name]; dup {
				return nil, fmt.Errorf("openapi.yaml already has a schema %s, which %s's CRD makes", name, k.Kind)
			}
			schemas[name] = schema
		}
	}
	var templates []string
	for path := range paths {
		if strings.Contains(path, kindSegment) {
			templates = append(templates, path)
		}
	}
	for _, path := range templates {
		item := paths[path]
		delete(paths, path)
		for _, k := range kinds {
			p := strings.Replace(path, kindSegment, k.Plural, 1)
			if _, dup := paths[p]; dup {
				return nil, fmt.Errorf("openapi.yaml has %s, which %s makes too", p, path)
			}
			paths[p] = forKind(item, k)
		}
	}
	delete(schemas, "KubernetesObject")
	delete(schemas, "KubernetesObjectInput")
	if params, ok := lookup(doc, "components", "parameters").(map[string]any); ok {
		delete(params, "Kind")
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// kindSchemas are a kind's component schemas: <Kind> (as the portal answers it),
// <Kind>Input (as a client sends it: apiVersion and kind default to the path's; no status),
// <Kind>List, and <Kind>Spec and <Kind>Status from the CRD.
func kindSchemas(k mooringv1.KindInfo, crdYAML []byte) (map[string]any, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(crdYAML, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", CRDFile(k), err)
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == k.Version })
	if i < 0 || crd.Spec.Versions[i].Schema == nil || crd.Spec.Versions[i].Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("%s has no schema for %s", CRDFile(k), k.Version)
	}
	root := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
	spec, okSpec := root.Properties["spec"]
	status, okStatus := root.Properties["status"]
	if !okSpec || !okStatus {
		return nil, fmt.Errorf("%s %s: the schema has no spec or no status", CRDFile(k), k.Version)
	}
	specSchema, err := asMap(spec)
	if err != nil {
		return nil, err
	}
	statusSchema, err := asMap(status)
	if err != nil {
		return nil, err
	}
	ref := func(name string) map[string]any { return map[string]any{"$ref": schemasPrefix + name} }
	apiVersion := mooringv1.GroupVersion.Group + "/" + k.Version
	object := func(required []string, typed bool) map[string]any {
		// The portal refuses any other apiVersion or kind than the path's (422).
		str := func(v string) map[string]any {
			s := map[string]any{"type": "string", "enum": []any{v}}
			if !typed {
				s["description"] = "defaults to " + v
			}
			return s
		}
		props := map[string]any{
			"apiVersion": str(apiVersion),
			"kind":       str(k.Kind),
			"metadata":   ref("ObjectMeta"),
			"spec":       ref(k.Kind + "Spec"),
		}
		// Status is Mooring's to write: the portal answers it, a client does not send it.
		if typed {
			props["status"] = ref(k.Kind + "Status")
		}
		if slices.Contains(root.Required, "spec") {
			required = append(required, "spec")
		}
		return map[string]any{"type": "object", "description": root.Description, "required": toAny(required), "properties": props}
	}
	return map[string]any{
		k.Kind:            object([]string{"apiVersion", "kind", "metadata"}, true),
		k.Kind + "Input":  object([]string{"metadata"}, false),
		k.Kind + "Spec":   specSchema,
		k.Kind + "Status": statusSchema,
		k.Kind + "List": map[string]any{
			"type":     "object",
			"required": []any{"items"},
			"properties": map[string]any{
				"apiVersion": map[string]any{"type": "string"},
				"kind":       map[string]any{"type": "string"},
				"metadata":   ref("ListMeta"),
				"items":      map[string]any{"type": "array", "items": ref(k.Kind)},
			},
		},
	}, nil
}

// forKind is a {kind} path item written out for k: the Kind parameter goes, schema
// placeholders become k's schemas, operation IDs name k (listResources: listApps) and
// descriptions say {kind} for k's objects (Apps).
func forKind(item any, k mooringv1.KindInfo) any {
	switch v := item.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for key, val := range v {
			switch {
			case key == "$ref" && val == objectSchema:
				val = schemasPrefix + k.Kind
			case key == "$ref" && val == inputSchema:
				val = schemasPrefix + k.Kind + "Input"
			case key == "$ref" && val == listSchema:
				val = schemasPrefix + k.Kind + "List"
			case key == "description":
				d, _ := val.(string)
				val = strings.ReplaceAll(d, kindSegment, k.Kind+"s")
			case key == "operationId":
				id, _ := val.(string)
				id = strings.Replace(id, resourcesOpWord, k.Kind+"s", 1)
				val = strings.Replace(id, resourceOpWord, k.Kind, 1)
			case key == "parameters":
				params, _ := val.([]any)
				val = slices.DeleteFunc(slices.Clone(params), func(p any) bool {
					m, _ := p.(map[string]any)
					return m["$ref"] == kindParameter
				})
			}
			out[key] = forKind(val, k)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = forKind(v[i], k)
		}
		return out
	default:
		return v
	}
}

// asMap is a CRD schema as generic JSON, as the document holds it.
func asMap(s apiextensionsv1.JSONSchemaProps) (map[string]any, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

func lookup(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i]
	}
	return out
}

// GeneratedFile is the file in this package that Build's output is kept in.
const GeneratedFile = "zz_generated.openapi.json"
