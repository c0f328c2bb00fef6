package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/testutil"
)

// The chart's policy on User edits, rendered for a release in "ops" with the portal in
// "portal-x" and portal.protectedNamespaces [vault], refuses on a real API server what
// that portal protects: its namespaces, its users', the release's (the operator's),
// the listed ones and kube-*, naming spec.namespaces; anything else is written.
func TestChartPolicyRefusesTheReleasesProtectedNamespaces(t *testing.T) {
	cfg := apiServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out, err := render(chartPath, "ops", map[string]any{"portal": map[string]any{"enabled": true, "namespace": "portal-x", "protectedNamespaces": []any{"vault"}}})
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	var policy []*unstructured.Unstructured
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		u := find(rendered, kind, "mooring-portal-user-grants")
		if u == nil {
			t.Fatalf("the chart renders no %s mooring-portal-user-grants", kind)
		}
		policy = append(policy, u)
	}
	for _, u := range policy {
		if err := c.Create(ctx, u); err != nil {
			t.Fatalf("create %s: %v", u.GetKind(), err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), u) })
	}

	user := func(namespaces ...string) *unstructured.Unstructured {
		id := uuid.NewString()
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("portal.mooring.dev/v1alpha1")
		u.SetKind("User")
		u.SetName("user-" + id[:8])
		ns := make([]any, 0, len(namespaces))
		for _, n := range namespaces {
			ns = append(ns, n)
		}
		u.Object["spec"] = map[string]any{"id": id, "username": u.GetName(), "email": "u@example.com", "role": "developer", "namespaces": ns}
		return u
	}
	// The API server takes a new policy into force within moments.
	testutil.Eventually(t, 10*time.Second, "the chart's policy to refuse kube-system", func() error {
		u := user("kube-system")
		err := c.Create(ctx, u)
		if err == nil {
			_ = c.Delete(ctx, u)
			return errorString("kube-system was written into a User")
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			return err
		}
		return nil
	})
	for _, tc := range []struct {
		ns      string
		refused bool
	}{
		{"portal-x", true}, {"mooring-portal-users", true}, {"ops", true}, {"vault", true}, {"kube-public", true},
		{"mooring-system", false}, {"mooring-portal", false}, {"team-a", false},
	} {
		u := user(tc.ns)
		err := c.Create(ctx, u)
		if err == nil {
			_ = c.Delete(ctx, u)
		}
		switch {
		case tc.refused && err == nil:
			t.Errorf("%s: written into a User, want it refused", tc.ns)
		case tc.refused && (!strings.Contains(err.Error(), "spec.namespaces") || !strings.Contains(err.Error(), tc.ns)):
			t.Errorf("%s: want a refusal naming spec.namespaces and it, got %v", tc.ns, err)
		case !tc.refused && err != nil:
			t.Errorf("%s: not protected by this release's portal, want it written, got %v", tc.ns, err)
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
