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

// ensureSecret makes sure the certificate Secret exists and holds certificates before
// the manager starts: it creates the Secret when it is missing and fills it when it is
// empty, with what issue returns. The rotator fills a Secret but cannot create one, and
// fails the operator's start without it. A Secret that holds anything is left to the
// rotator, which keeps valid certificates and replaces expiring ones.
//
// Why not leave an empty Secret to the rotator: config/webhook and the chart ship the
// Secret empty (so that uninstalling removes it), and on an empty Secret the rotator's
// start-up pass and its webhook reconciler both issue certificates at once; a fresh
// install logged a write conflict and "secret is not well-formed, missing ca.crt" before
// settling (TestSelfManagedCertificates).
//
// Replicas starting together do not race: the create fails with AlreadyExists and the
// fill with a conflict (it is an update at the resourceVersion read) for all but the
// first, and the others then read and use its certificates.
func ensureSecret(cfg *rest.Config, key types.NamespacedName, issue func() (map[string][]byte, error)) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("certificate Secret %s: %w", key, err)
	}
	secrets := cs.CoreV1().Secrets(key.Namespace)
	log := ctrl.Log.WithName("cert-rotation")
	ctx, cancel := context.WithTimeout(context.Background(), secretCreateTimeout)
	defer cancel()
	var issued map[string][]byte // issued once, however often the API server is retried
	certificates := func() (map[string][]byte, error) {
		if issued == nil {
			data, err := issue()
			if err != nil {
				return nil, fmt.Errorf("issue the first webhook certificate: %w", err)
			}
			issued = data
		}
		return issued, nil
	}
	var lastErr error
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		// A read first: on every restart after the first the Secret holds certificates,
		// and a create that fails with AlreadyExists would still be a write for the API
		// server.
		current, err := secrets.Get(ctx, key.Name, metav1.GetOptions{})
		switch {
		case err == nil && len(current.Data) > 0:
			return true, nil
		case err == nil:
			data, err := certificates()
			if err != nil {
				return false, err
			}
			current.Data = data
			_, lastErr = secrets.Update(ctx, current, metav1.UpdateOptions{FieldManager: "mooring"})
			if lastErr == nil {
				log.Info("Filled the empty webhook certificate Secret with a new CA and serving certificate", "secret", key)
				return true, nil
			}
		case apierrors.IsNotFound(err):
			data, err := certificates()
			if err != nil {
				return false, err
			}
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace,
					Labels: map[string]string{"app.kubernetes.io/managed-by": "mooring"}},
				Data: data,
			}
			_, lastErr = secrets.Create(ctx, secret, metav1.CreateOptions{FieldManager: "mooring"})
			if lastErr == nil {
				log.Info("Created the webhook certificate Secret with a new CA and serving certificate", "secret", key)
				return true, nil
			}
		default:
			lastErr = err
		}
		switch {
		case apierrors.IsAlreadyExists(lastErr), apierrors.IsConflict(lastErr):
			return false, nil // another replica was first: read what it wrote
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
		return fmt.Errorf("create or fill the webhook certificate Secret %s: %w", key, err)
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
