package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// schemaLocation is where schemaDir's files are, as kubeconform's template: one file per
// kind and version, in the strict variant.
const schemaLocation = "{{ .Group }}/{{ .ResourceAPIVersion }}/{{ .ResourceKind }}{{ .StrictSuffix }}.json"

// kubeconformSets are the value sets whose every rendered object kubeconform validates:
// those of the golden renders (defaults; cert-manager mode with the ServiceMonitor;
// the portal with NetworkPolicies, metrics readers, ServiceMonitor, rules and
// dashboards; the least) and the portal alone, in its own namespace and in the
// release's.
func kubeconformSets() map[string]map[string]any {
	sets := valueSets()
	sets["portal"] = map[string]any{"portal": map[string]any{"enabled": true}}
	sets["portal in the release namespace, one replica each"] = map[string]any{"replicas": 1,
		"portal": map[string]any{"enabled": true, "namespace": "", "replicas": 1}}
	return sets
}

// TestKubeconformStrict validates every object the chart renders, CRDs included, with
// kubeconform in strict mode against the schemas the API server itself publishes
// (/openapi/v3, with the chart's CRDs and prometheus-operator's and cert-manager's
// installed): an unknown field, a null where an object belongs or a wrong type fails.
func TestKubeconformStrict(t *testing.T) {
	cfg := apiServer(t)
	type doc struct{ set, text string }
	var docs []doc
	gvks := map[schema.GroupVersionKind]bool{}
	for name, vals := range kubeconformSets() {
		out, err := render(chartPath, namespace, vals)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		objs, err := decode([]byte(out))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, u := range objs {
			gvks[u.GroupVersionKind()] = true
		}
		for _, text := range docSeparator.Split(out, -1) {
			if strings.TrimSpace(text) != "" {
				docs = append(docs, doc{name, text})
			}
		}
	}
	dir := t.TempDir()
	start := time.Now()
	if err := writeSchemas(cfg, dir, slices.Collect(maps.Keys(gvks))); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d schemas from the API server's OpenAPI in %v", len(gvks), time.Since(start).Round(time.Millisecond))
	v, err := validator.New([]string{filepath.Join(dir, schemaLocation)}, validator.Opts{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	valid := 0
	for _, d := range docs {
		res := v.ValidateResource(resource.Resource{Path: d.set, Bytes: []byte(d.text)})
		sig, _ := res.Resource.Signature()
		switch res.Status {
		case validator.Valid:
			valid++
		case validator.Empty:
		default:
			t.Errorf("%s: %s %s: %v %v", d.set, sig.Kind, sig.Name, res.Err, res.ValidationErrors)
		}
	}
	if valid == 0 {
		t.Fatal("kubeconform validated nothing")
	}
	t.Logf("%d objects (%d kinds) valid", valid, len(gvks))
}

// TestKubeconformCatchesMistakes proves the schemas strict enough to fail what the
// checks are for: the null annotations the chart once rendered, an unknown field, a
// string for a number.
func TestKubeconformCatchesMistakes(t *testing.T) {
	cfg := apiServer(t)
	dir := t.TempDir()
	gvks := []schema.GroupVersionKind{
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"},
	}
	if err := writeSchemas(cfg, dir, gvks); err != nil {
		t.Fatal(err)
	}
	v, err := validator.New([]string{filepath.Join(dir, schemaLocation)}, validator.Opts{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"null annotations": "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: x\n  annotations:\n",
		"unknown field":    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replica: 2\n  selector: {matchLabels: {a: b}}\n  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}\n",
		"unknown nested":   "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  selector: {matchLabels: {a: b}}\n  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i, imagePolicy: Always}]}}\n",
		"wrong type":       "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: two\n  selector: {matchLabels: {a: b}}\n  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}\n",
		"CRD field":        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: x\nspec:\n  selector: {}\n  endpoints: [{port: https, intervall: 30s}]\n",
	} {
		if res := v.ValidateResource(resource.Resource{Path: name, Bytes: []byte(text)}); res.Status != validator.Invalid {
			t.Errorf("%s: status %d (%v), want invalid", name, res.Status, res.Err)
		}
	}
	ok := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 2\n  selector: {matchLabels: {a: b}}\n  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i, resources: {limits: {cpu: 1, memory: 1Gi}}, ports: [{containerPort: 80}], livenessProbe: {httpGet: {port: http}}}]}}\n"
	if res := v.ValidateResource(resource.Resource{Path: "ok", Bytes: []byte(ok)}); res.Status != validator.Valid {
		t.Errorf("a valid Deployment: status %d: %v %v", res.Status, res.Err, res.ValidationErrors)
	}
}

// writeSchemas fetches the API server's OpenAPI v3 documents of the group versions of
// gvks and writes, for each kind, a standalone JSON schema (draft 4, as kubeconform
// reads them) at schemaLocation under dir. A CRD's schema appears a moment after the
// CRD is established, so each is waited for.
func writeSchemas(cfg *rest.Config, dir string, gvks []schema.GroupVersionKind) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	docs := map[string]map[string]any{} // components.schemas by OpenAPI path
	for _, gvk := range gvks {
		path := "apis/" + gvk.Group + "/" + gvk.Version
		if gvk.Group == "" {
			path = "api/" + gvk.Version
		}
		var name string
		deadline := time.Now().Add(30 * time.Second)
		for {
			if docs[path] == nil {
				if docs[path], err = fetchSchemas(dc, path); err != nil && time.Now().After(deadline) {
					return err
				}
			}
			if name = schemaOf(docs[path], gvk); name != "" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the API server publishes no schema for %s at /openapi/v3/%s", gvk, path)
			}
			delete(docs, path)
			time.Sleep(200 * time.Millisecond)
		}
		data, err := json.Marshal(standalone(docs[path], name))
		if err != nil {
			return err
		}
		group := gvk.Group
		if group == "" {
			group = gvk.Version // kubeconform's {{ .Group }} of apiVersion v1
		}
		file := filepath.Join(dir, group, gvk.Version, strings.ToLower(gvk.Kind)+"-strict.json")
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// fetchSchemas returns components.schemas of the OpenAPI v3 document at path.
func fetchSchemas(dc *discovery.DiscoveryClient, path string) (map[string]any, error) {
	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		return nil, fmt.Errorf("/openapi/v3: %w", err)
	}
	gv, ok := paths[path]
	if !ok {
		return nil, fmt.Errorf("no /openapi/v3/%s", path)
	}
	data, err := gv.Schema("application/json")
	if err != nil {
		return nil, fmt.Errorf("/openapi/v3/%s: %w", path, err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("/openapi/v3/%s: %w", path, err)
	}
	return doc.Components.Schemas, nil
}

// schemaOf returns the name of the schema of gvk among schemas, or "".
func schemaOf(schemas map[string]any, gvk schema.GroupVersionKind) string {
	for name, s := range schemas {
		list, _ := s.(map[string]any)["x-kubernetes-group-version-kind"].([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
				return name
			}
		}
	}
	return ""
}

const refPrefix = "#/components/schemas/"

// standalone returns the schema name of schemas as a JSON schema of its own: the
// schemas it refers to, directly or not, under definitions, and strict, as
// kubeconform's own strict schemas are (openapi2jsonschema --strict): an object with
// properties has no others, unless it keeps unknown fields or embeds a resource.
// OpenAPI's nullable becomes a null type, int-or-string a choice of both, and a
// Quantity a string or a number, as the API server takes them.
func standalone(schemas map[string]any, name string) map[string]any {
	defs := map[string]any{}
	var visit func(string)
	visit = func(n string) {
		if _, done := defs[n]; done {
			return
		}
		defs[n] = nil
		s := convert(schemas[n], n)
		defs[n] = s
		for _, ref := range refs(s) {
			visit(ref)
		}
	}
	visit(name)
	root := map[string]any{"$ref": "#/definitions/" + name, "definitions": defs}
	return root
}

// refs returns the names of the schemas v refers to (after convert).
func refs(v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok && k == "$ref" {
				out = append(out, strings.TrimPrefix(s, "#/definitions/"))
				continue
			}
			out = append(out, refs(e)...)
		}
	case []any:
		for _, e := range t {
			out = append(out, refs(e)...)
		}
	}
	return out
}

// convert returns a JSON schema (draft 4) for the OpenAPI v3 schema v; name is the
// schema's own name at the top, "" below.
func convert(v any, name string) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if k == "$ref" {
				if s, ok := e.(string); ok {
					out[k] = "#/definitions/" + strings.TrimPrefix(s, refPrefix)
					continue
				}
			}
			// Below properties, each key is a field name, not a keyword.
			if k == "properties" {
				props := map[string]any{}
				for f, p := range e.(map[string]any) {
					props[f] = convert(p, "")
				}
				out[k] = props
				continue
			}
			out[k] = convert(e, "")
		}
		if strings.HasSuffix(name, ".api.resource.Quantity") {
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
		}
		if out["format"] == "int-or-string" || out["x-kubernetes-int-or-string"] == true {
			delete(out, "type")
			delete(out, "format")
			if _, has := out["anyOf"]; !has {
				out["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
			}
		}
		if typ, ok := out["type"].(string); ok && out["nullable"] == true {
			out["type"] = []any{typ, "null"}
		}
		_, hasProps := out["properties"]
		_, hasAdditional := out["additionalProperties"]
		if hasProps && !hasAdditional && out["x-kubernetes-preserve-unknown-fields"] != true && out["x-kubernetes-embedded-resource"] != true {
			out["additionalProperties"] = false
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = convert(e, "")
		}
		return out
	}
	return v
}
