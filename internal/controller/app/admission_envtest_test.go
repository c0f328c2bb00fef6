package app_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// expectRouteCheckedByItsCRD checks, once the Gateway API is installed, that an App's
// HTTPRoute is checked at admission by a dry run against the HTTPRoute CRD itself (its
// schema and CEL rules), not by the webhook's rules for clusters without it, and that the
// refusal names the App's field.
func expectRouteCheckedByItsCRD(t *testing.T, ns string) {
	t.Helper()
	bad := &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: "routed-listener", Namespace: ns},
		Spec: mooringv1.AppSpec{Image: "nginx:1.27", Port: ptr.To[int32](8080),
			Expose: &mooringv1.AppExpose{Gateway: &mooringv1.AppGatewayRef{Name: "public", SectionName: "HTTPS_443"}}},
	}
	err := env.Client.Create(ctx, bad)
	switch {
	case err == nil:
		t.Fatal("an App whose HTTPRoute names the listener HTTPS_443 was admitted")
	case !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err):
		t.Fatalf("error %q is not a validation error", err)
	case !strings.Contains(err.Error(), "spec.expose.gateway.sectionName"):
		t.Fatalf("error %q does not name spec.expose.gateway.sectionName", err)
	case strings.Contains(err.Error(), "must be the name of a Gateway listener"):
		t.Fatalf("error %q is the webhook's own rule, not the HTTPRoute CRD's: the route was not dry-run", err)
	}
	good := bad.DeepCopy()
	good.Spec.Expose.Gateway.SectionName = "https"
	if err := env.Client.Create(ctx, good); err != nil {
		t.Fatalf("an App whose HTTPRoute names the listener https was refused: %v", err)
	}
}
