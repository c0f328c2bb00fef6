package webhook

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// secretCreateTimeout bounds how long a starting operator tries to create its certificate
// Secret: an API server that is still starting (or restarting) gets this long.
const secretCreateTimeout = time.Minute

// ensureSecret creates the (empty) certificate Secret when it does not exist. The rotator
// fills a Secret but cannot create one, and fails the operator's start without it; with a
// Secret created here, a fresh install (or one whose Secret was deleted) issues new
// certificates instead. It runs before the manager starts, so the rotator's first read
// finds the Secret; creating is idempotent, so replicas starting together do not race.
func ensureSecret(cfg *rest.Config, key types.NamespacedName) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("certificate Secret %s: %w", key, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretCreateTimeout)
	defer cancel()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "mooring"}},
	}
	var lastErr error
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		// A read first: on every restart after the first the Secret exists, and a create
		// that fails with AlreadyExists would still be a write for the API server.
		if _, err := cs.CoreV1().Secrets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{}); err == nil {
			return true, nil
		}
		_, lastErr = cs.CoreV1().Secrets(key.Namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: "mooring"})
		switch {
		case lastErr == nil:
			ctrl.Log.WithName("cert-rotation").Info("Created the webhook certificate Secret; certificates will be issued", "secret", key)
			return true, nil
		case apierrors.IsAlreadyExists(lastErr):
			return true, nil
		case apierrors.IsForbidden(lastErr), apierrors.IsNotFound(lastErr), apierrors.IsInvalid(lastErr):
			return false, lastErr // will not get better by waiting (NotFound: no such namespace)
		default:
			return false, nil
		}
	})
	if err != nil {
		if lastErr != nil {
			err = lastErr
		}
		return fmt.Errorf("create the webhook certificate Secret %s: %w", key, err)
	}
	return nil
}
