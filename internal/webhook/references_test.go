package webhook

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// reviewerFunc answers SubjectAccessReviews with allow, and records them.
type reviewerFunc func(*authorizationv1.SubjectAccessReview) bool

func (f reviewerFunc) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	sar := obj.(*authorizationv1.SubjectAccessReview)
	sar.Status.Allowed = f(sar)
	return nil
}

var allowAll = reviewerFunc(func(*authorizationv1.SubjectAccessReview) bool { return true })

// asUser is a context carrying an admission request made by user.
func asUser(user string) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UserInfo: authenticationv1.UserInfo{Username: user, UID: "uid-" + user, Groups: []string{"team", "system:authenticated"},
			Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a"}}},
	}})
}

// secretsDenied allows everything but getting Secrets, and records what was asked.
type secretsDenied struct {
	asked []authorizationv1.SubjectAccessReviewSpec
}

func (s *secretsDenied) reviewer() Reviewer {
	return reviewerFunc(func(sar *authorizationv1.SubjectAccessReview) bool {
		s.asked = append(s.asked, sar.Spec)
		return sar.Spec.ResourceAttributes.Resource != "secrets"
	})
}

func envFromSecret(name string) corev1.EnvFromSource {
	return corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

// Every Secret and ConfigMap the App's pods read is reviewed for the requesting user,
// with the user's groups, UID and extra; each denied one is refused on its field, naming
// the permission.
func TestAppReferencesReviewedForTheUser(t *testing.T) {
	reader := fake.NewClientBuilder().WithScheme(bootstrapScheme(t)).WithObjects(
		&v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
			Spec:   v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, SecretName: "orders-admin"},
			Status: v1beta1.DatabaseClusterStatus{Binding: &v1beta1.ServiceBindingStatus{Name: "orders-binding", SecretName: "orders-admin"}}},
	).Build()
	app := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: mooringv1.AppSpec{
		Image: "nginx:1.27",
		Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "api-key"}, Key: "k"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "k"}}},
		},
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
			envFromSecret("api-key"),
		},
		Bindings: []mooringv1.AppBinding{
			{Name: "db", Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindDatabaseCluster, Name: "orders"}},
			{Name: "later", Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindDatabaseCluster, Name: "later"}},
		},
	}}
	s := &secretsDenied{}
	_, err := AppValidator{Reader: reader, Reviewer: s.reviewer()}.ValidateCreate(asUser("alice"), app)
	if err == nil {
		t.Fatal("admitted an App reading Secrets its user may not get")
	}
	for _, want := range []string{
		`spec.env[0].valueFrom.secretKeyRef.name: Forbidden: user alice may not get secrets "api-key" in namespace shop`,
		`spec.envFrom[1].secretRef.name: Forbidden: user alice may not get secrets "api-key" in namespace shop`,
		`spec.bindings[0].ref.name: Forbidden: user alice may not get secrets "orders-admin" in namespace shop (the credentials of DatabaseCluster orders`,
		// A cluster that does not exist yet will generate its default Secret.
		`spec.bindings[1].ref.name: Forbidden: user alice may not get secrets "later-credentials" in namespace shop`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "configmaps") || strings.Contains(err.Error(), "databaseclusters") {
		t.Errorf("refused what the user may get: %v", err)
	}
	var asked []string
	for _, spec := range s.asked {
		if spec.User != "alice" || spec.UID != "uid-alice" || len(spec.Groups) != 2 || spec.Extra["scopes"][0] != "a" {
			t.Errorf("review not for the requesting user: %+v", spec)
		}
		a := spec.ResourceAttributes
		if a.Verb != "get" || a.Namespace != "shop" {
			t.Errorf("review of %+v, want get in shop", a)
		}
		asked = append(asked, a.Group+"/"+a.Resource+"/"+a.Name)
	}
	want := "/secrets/api-key /configmaps/settings mooring.dev/databaseclusters/orders /secrets/orders-admin /configmaps/orders-binding mooring.dev/databaseclusters/later /secrets/later-credentials"
	if got := strings.Join(asked, " "); got != want {
		t.Errorf("reviewed %s\nwant     %s (each object once)", got, want)
	}

	// The same App for a user who may get them all.
	if _, err := (AppValidator{Reader: reader, Reviewer: allowAll}).ValidateCreate(asUser("bob"), app); err != nil {
		t.Fatalf("refused a user who may get every reference: %v", err)
	}
}

// On an update only new or changed references are reviewed: a Secret someone else added
// does not block an unrelated edit, a newly named one is checked.
func TestAppUpdateReviewsOnlyNewReferences(t *testing.T) {
	old := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: mooringv1.AppSpec{
		Image: "nginx:1.27", EnvFrom: []corev1.EnvFromSource{envFromSecret("orders-admin")}}}
	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](3)
	s := &secretsDenied{}
	v := AppValidator{Reviewer: s.reviewer()}
	if _, err := v.ValidateUpdate(asUser("carol"), old, scaled); err != nil {
		t.Fatalf("an unrelated edit of an App with a Secret its user may not get: %v", err)
	}
	if len(s.asked) != 0 {
		t.Fatalf("reviewed unchanged references: %+v", s.asked)
	}
	changed := scaled.DeepCopy()
	changed.Spec.EnvFrom = append(changed.Spec.EnvFrom, envFromSecret("payments"))
	_, err := v.ValidateUpdate(asUser("carol"), old, changed)
	if err == nil || !strings.Contains(err.Error(), `spec.envFrom[1].secretRef.name: Forbidden: user carol may not get secrets "payments"`) ||
		strings.Contains(err.Error(), "orders-admin") {
		t.Fatalf("adding a Secret = %v, want only the new one refused", err)
	}
}

// A DatabaseCluster's own spec.secretName and a Backup's existing claim are reviewed; the
// default credentials Secret, which Mooring generates, is not.
func TestDatabaseAndBackupReferences(t *testing.T) {
	s := &secretsDenied{}
	// The reader finds no credentials Secret: the application user is not looked at.
	v := DatabaseClusterValidator{Reviewer: s.reviewer(), Reader: fake.NewClientBuilder().WithScheme(bootstrapScheme(t)).Build()}
	db := &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, Version: DefaultVersion(v1beta1.PostgreSQL), SecretName: "orders-credentials"}}
	if _, err := v.ValidateCreate(asUser("dave"), db); err != nil || len(s.asked) != 0 {
		t.Fatalf("a cluster with the default Secret: %v, reviews %v", err, s.asked)
	}
	db.Spec.SecretName = "payments-owner"
	_, err := v.ValidateCreate(asUser("dave"), db)
	if err == nil || !strings.Contains(err.Error(), `spec.secretName: Forbidden: user dave may not get secrets "payments-owner" in namespace shop`) {
		t.Fatalf("a cluster naming a Secret its user may not get = %v", err)
	}

	denyClaims := reviewerFunc(func(sar *authorizationv1.SubjectAccessReview) bool {
		return sar.Spec.ResourceAttributes.Resource != "persistentvolumeclaims"
	})
	b := &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop"}, Spec: mooringv1.BackupSpec{
		DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "@daily",
		Storage: mooringv1.BackupStorage{ExistingClaim: "finance-archive"}}}
	_, err = BackupValidator{Reviewer: denyClaims}.ValidateCreate(asUser("dave"), b)
	if err == nil || !strings.Contains(err.Error(), `spec.storage.existingClaim: Forbidden: user dave may not get persistentvolumeclaims "finance-archive" in namespace shop`) {
		t.Fatalf("a Backup writing to a claim its user may not get = %v", err)
	}
	suspended := b.DeepCopy()
	suspended.Spec.Suspend = true
	if _, err := (BackupValidator{Reviewer: denyClaims}).ValidateUpdate(asUser("dave"), b, suspended); err != nil {
		t.Fatalf("suspending a Backup whose claim its user may not get: %v", err)
	}
}
