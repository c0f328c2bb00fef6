package webhook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// ensureSecret creates the certificate Secret when it does not exist, holding what issue
// returns. The rotator fills a Secret but cannot create one, and fails the operator's
// start without it. It runs before the manager starts, so the rotator's first read
// finds the Secret; creating is idempotent, so replicas starting together do not race
// (the first to create wins; the others use its certificates).
//
// The Secret is created complete, with a CA and serving certificate, rather than empty
// for the rotator to fill: on an empty Secret the rotator's start-up pass and its
// webhook reconciler both issue certificates at once, and a fresh install logged a
// write conflict and "secret is not well-formed, missing ca.crt" before settling
// (TestSelfManagedCertificates). A Secret someone else created empty is still filled
// by the rotator.
func ensureSecret(cfg *rest.Config, key types.NamespacedName, issue func() (map[string][]byte, error)) error {
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
		if secret.Data == nil {
			data, err := issue()
			if err != nil {
				return false, fmt.Errorf("issue the first webhook certificate: %w", err)
			}
			secret.Data = data
		}
		_, lastErr = cs.CoreV1().Secrets(key.Namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: "mooring"})
		switch {
		case lastErr == nil:
			ctrl.Log.WithName("cert-rotation").Info("Created the webhook certificate Secret with a new CA and serving certificate", "secret", key)
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

// writeStoredCert writes the certificate the Secret already holds (none on a first start)
// into dir, read directly from the API server before the manager starts: the informer of
// SyncSecretToDir runs only after the manager's caches have synced, and those may need the
// conversion webhook, which needs the certificate.
func writeStoredCert(cfg *rest.Config, key types.NamespacedName, dir string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("certificate Secret %s: %w", key, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretCreateTimeout)
	defer cancel()
	s, err := cs.CoreV1().Secrets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the webhook certificate Secret %s: %w", key, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create certificate directory: %w", err)
	}
	if len(s.Data["tls.crt"]) == 0 || len(s.Data["tls.key"]) == 0 {
		// The directory mirrors the Secret, as a mounted volume would: a certificate left
		// from an earlier Secret must not be served while the rotator issues a new one.
		for _, name := range certFiles {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove a stale webhook certificate: %w", err)
			}
		}
		return nil
	}
	if err := writeCertFiles(dir, s.Data); err != nil {
		return fmt.Errorf("write the webhook certificate from Secret %s: %w", key, err)
	}
	return nil
}
