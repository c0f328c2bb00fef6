package webhook_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/mooringhq/mooring/internal/testutil"
)

// Annotations of test/admission/invalid.yaml: what each rejection must say.
const (
	expectField   = "admission.mooring.dev/field"
	expectMessage = "admission.mooring.dev/message"
)

// readManifests decodes every document of a multi-document YAML file under test/admission.
func readManifests(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "test", "admission", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: %v", name, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// Every manifest of the catalogue is rejected by the API server, with Mooring's CRDs and
// webhooks, and the rejection names the field (and says what) the catalogue expects.
func TestAdmissionCatalogueRejects(t *testing.T) {
	ns := env.Namespace(t)
	docs := readManifests(t, "invalid.yaml")
	perVersion := map[string]int{}
	for _, u := range docs {
		field, message := u.GetAnnotations()[expectField], u.GetAnnotations()[expectMessage]
		id := u.GetAPIVersion() + " " + u.GetKind() + " " + u.GetName()
		if field == "" {
			t.Errorf("%s: no %s annotation", id, expectField)
			continue
		}
		perVersion[u.GetAPIVersion()+" "+u.GetKind()]++
		u.SetNamespace(ns)
		err := env.Client.Create(ctx, u)
		switch {
		case err == nil:
			t.Errorf("%s: accepted, want a rejection naming %s", id, field)
		case !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsForbidden(err):
			t.Errorf("%s: error %q is not a validation error", id, err)
		case !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), message):
			t.Errorf("%s: error %q does not name %s with %q", id, err, field, message)
		}
		if err != nil {
			if text := unreadable(err.Error()); text != "" {
				t.Errorf("%s: error %q says %q, not in words naming a field", id, err, text)
			}
		}
	}
	t.Logf("%d invalid manifests rejected: %v", len(docs), perVersion)
	if len(docs) < 50 || len(perVersion) < 5 {
		t.Fatalf("the catalogue has %d manifests over %d kinds and versions, want at least 50 over App, CacheInstance, Backup and both DatabaseCluster versions", len(docs), len(perVersion))
	}
}

// unreadableText is what a refusal must not say: "<nil>" is the field of an error found by
// a CEL rule on the CRD's root (no field named), the other Go's JSON decoding of a wrong
// type, which names a Go type where the user wrote a field.
var unreadableText = []string{"<nil>", "json: cannot unmarshal"}

// skippedRulesNote is the one "<nil>" line Mooring cannot remove: the API server adds it,
// with no field, to a refusal by a CRD's schema (a required field, an enum, a maximum
// length, a wrong type) whenever the CRD has CEL rules, which it then leaves unchecked
// (apiextensions-apiserver's hasBlockingErr). The refusal names the field too.
const skippedRulesNote = "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"

// unreadable is the first unreadableText in a refusal's message, "" when none.
func unreadable(msg string) string {
	msg = strings.ReplaceAll(msg, skippedRulesNote, "")
	for _, text := range unreadableText {
		if strings.Contains(msg, text) {
			return text
		}
	}
	return ""
}

// The longest names and the smallest values each kind allows are accepted.
func TestAdmissionEdgeCasesAccepted(t *testing.T) {
	ns := env.Namespace(t)
	for _, u := range readManifests(t, "valid.yaml") {
		u.SetNamespace(ns)
		if err := env.Client.Create(ctx, u); err != nil {
			t.Errorf("%s %s (%d characters) rejected: %v", u.GetKind(), u.GetName(), len(u.GetName()), err)
		}
	}
}
