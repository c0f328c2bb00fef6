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
	}
	t.Logf("%d invalid manifests rejected: %v", len(docs), perVersion)
	if len(docs) < 50 || len(perVersion) < 5 {
		t.Fatalf("the catalogue has %d manifests over %d kinds and versions, want at least 50 over App, CacheInstance, Backup and both DatabaseCluster versions", len(docs), len(perVersion))
	}
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
