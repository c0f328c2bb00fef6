package faults

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/testutil"
)

// The operator starts although its webhook certificate Secret does not exist: it creates
// the Secret, issues a CA and a serving certificate into it, injects the CA, and serves
// its webhooks; a Mooring object is then admitted through them.
func TestStartsWithoutWebhookSecret(t *testing.T) {
	stopOperator(t)
	key := client.ObjectKey{Namespace: devenv.Namespace, Name: devenv.SecretName}
	secret := &corev1.Secret{}
	if err := suite.Client.Get(ctx, key, secret); err == nil {
		if err := suite.Client.Delete(ctx, secret); err != nil {
			t.Fatal(err)
		}
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "the Secret to be gone", func() error {
		if err := suite.Client.Get(ctx, key, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Get returned %w", err)
		}
		return nil
	})

	t0 := time.Now()
	suite.EnsureOperator(t)
	if err := suite.Client.Get(ctx, key, secret); err != nil {
		t.Fatalf("the operator is ready but its certificate Secret is not there: %v", err)
	}
	for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("Secret %s has no %s", key, k)
		}
	}
	testutil.Eventually(t, time.Minute, "the CA injected into the webhook configurations", func() error {
		return devenv.WebhooksReady(ctx, suite.Config)
	})
	ns := suite.Namespace(t, "webhook-secret")
	suite.Apply(t, ns, "apiVersion: mooring.dev/v1beta1\nkind: DatabaseCluster\nmetadata:\n  name: admitted\nspec:\n  engine: postgresql\n")
	// Defaulted by the mutating webhook: the webhooks are served with the new certificate.
	suite.WaitField(t, 10*time.Second, ns, "databasecluster/admitted", ".spec.secretName", "admitted-credentials")
	t.Logf("started without its webhook Secret: created it, ready and serving webhooks %s after exec", time.Since(t0).Round(100*time.Millisecond))
}
