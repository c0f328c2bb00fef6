package manager

import (
	"errors"
	"fmt"
	"net/http"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/mooringhq/mooring/api/v1alpha1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/webhook"
)

func init() {
	utilruntime.Must(v1alpha1.AddToScheme(Scheme))
	utilruntime.Must(v1beta1.AddToScheme(Scheme))
}

// Certificate management modes for the webhook server.
const (
	// CertsSelf: Mooring makes, rotates and injects its own CA and serving certificate.
	CertsSelf = "self"
	// CertsExternal: certificates are put into the cert directory by someone else
	// (cert-manager, envtest) who also injects the CA bundle.
	CertsExternal = "external"
)

// WebhookOptions configure how the webhooks are served.
type WebhookOptions struct {
	// CertManagement is CertsSelf or CertsExternal.
	CertManagement string
	// Cert is used with CertsSelf.
	Cert webhook.CertOptions
}

// SetupWebhooks registers the webhooks and returns a readiness check that passes when the
// webhook server is serving (and, with CertsSelf, the rotator has its certificate ready).
//
// The webhooks are registered now, before the manager starts, so the webhook server is
// in the manager's webhooks group and starts before the caches sync: the cache's
// DatabaseCluster informer needs the conversion webhook while objects are stored in
// v1alpha1. The server itself waits for its certificate files (webhook.AwaitCertificate).
func SetupWebhooks(mgr ctrl.Manager, o WebhookOptions) (healthz.Checker, error) {
	var certReady <-chan struct{}
	switch o.CertManagement {
	case CertsExternal:
	case CertsSelf:
		ready, err := webhook.AddCertRotation(mgr, o.Cert)
		if err != nil {
			return nil, err
		}
		certReady = ready
	default:
		return nil, fmt.Errorf("unknown certificate management %q (want %q or %q)", o.CertManagement, CertsSelf, CertsExternal)
	}
	if err := webhook.Setup(mgr); err != nil {
		return nil, fmt.Errorf("set up webhooks: %w", err)
	}
	return func(req *http.Request) error {
		if certReady != nil {
			select {
			case <-certReady:
			default:
				return errors.New("webhook serving certificate not ready yet")
			}
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	}, nil
}
