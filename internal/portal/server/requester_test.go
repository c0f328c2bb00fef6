package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// Through the portal, which impersonates its users, a developer is what RBAC makes them:
// an App reading a Secret the developer may not get, or running as root in a namespace
// without a Pod Security level, is refused by Mooring's webhook with the API server's 422,
// naming the field, the impersonated user and the missing permission.
func TestPortalDeveloperCannotReachSecretsOrRoot(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	ns := env.Namespace(t)
	if err := admin.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-admin", Namespace: ns},
		StringData: map[string]string{"password": "superuser"}}); err != nil {
		t.Fatal(err)
	}
	dev, pw := p.Register("dev")
	p.Grant(adm, dev.ID, "developer", ns)
	tok := p.Login(dev.Username, pw).AccessToken
	user := "system:serviceaccount:mooring-portal-users:u-" + dev.ID

	thief := portaltest.App("thief")
	thief["spec"].(map[string]any)["envFrom"] = []any{map[string]any{"secretRef": map[string]any{"name": "orders-admin"}}}
	r := p.Do("POST", "/api/v1/namespaces/"+ns+"/apps", tok, thief)
	portaltest.Expect(t, r, http.StatusUnprocessableEntity, "a developer's App reading a Secret they may not get")
	e := r.Error(t)
	want := `user ` + user + ` may not get secrets "orders-admin" in namespace ` + ns
	if e.Code != "Invalid" || len(e.Fields) != 1 || e.Fields[0].Field != "spec.envFrom[0].secretRef.name" || !strings.Contains(e.Fields[0].Message, want) {
		t.Fatalf("want Invalid on spec.envFrom[0].secretRef.name saying %q, got %+v", want, e)
	}

	root := portaltest.App("root")
	root["spec"].(map[string]any)["securityContext"] = map[string]any{"runAsNonRoot": false}
	r = p.Do("POST", "/api/v1/namespaces/"+ns+"/apps", tok, root)
	portaltest.Expect(t, r, http.StatusUnprocessableEntity, "a developer's root App in a namespace without a Pod Security level")
	if e := r.Error(t); len(e.Fields) == 0 || e.Fields[0].Field != "spec.securityContext.runAsNonRoot" ||
		!strings.Contains(e.Fields[0].Message, `which Mooring takes as Pod Security level "restricted"`) {
		t.Fatalf("want the root App refused on spec.securityContext.runAsNonRoot, got %+v", e)
	}

	// The same developer's plain App is created.
	portaltest.Expect(t, p.Do("POST", "/api/v1/namespaces/"+ns+"/apps", tok, portaltest.App("web")), http.StatusCreated, "a developer's plain App")
}
