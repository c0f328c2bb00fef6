package ui

import (
	"context"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestRuleErrorsWithoutAFieldReadWell: a validation rule on a whole object fails with
// no field path, which the API server writes as "<nil>"; the page shows the error under
// the field its message names and never "<nil>".
func TestRuleErrorsWithoutAFieldReadWell(t *testing.T) {
	err := apierrors.NewInvalid(schema.GroupKind{Group: "mooring.dev", Kind: "App"}, "Bad_Name", field.ErrorList{
		field.Invalid(field.NewPath("metadata", "name"), "Bad_Name", "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"),
		field.Invalid(nil, nil, "metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the App's Service"),
	})
	p := describe(context.Background(), err)
	if strings.Contains(p.Message, "<nil>") {
		t.Errorf("message %q says <nil>", p.Message)
	}
	for f, msg := range p.Fields {
		if strings.Contains(f, "<nil>") || strings.Contains(msg, "<nil>") {
			t.Errorf("field %q: %q says <nil>", f, msg)
		}
	}
	if msg := p.Fields["metadata.name"]; !strings.Contains(msg, "DNS-1035 label") || !strings.Contains(msg, "RFC 1123") {
		t.Errorf("want both errors under metadata.name, got %q", msg)
	}
}

// TestBadPathParametersAreRefused: the UI's paths check their namespace and name like
// the API's: 400, before anything asks the cluster.
func TestBadPathParametersAreRefused(t *testing.T) {
	h := newHarness(t)
	dev := h.as("dev")
	for _, path := range []string{"/ns/%2e%2e", "/ns/Team_A/apps/new", "/ns/team-a/apps/%2e%2e/edit"} {
		a := dev.get(Prefix + path)
		wantStatus(t, a, http.StatusBadRequest, path)
		wantIn(t, a.body, path, "is not a valid")
	}
}
