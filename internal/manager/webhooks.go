package manager

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

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

// SetupWebhooks registers the webhooks, once the serving certificate exists, and returns
// a readiness check that passes when the webhook server is serving.
func SetupWebhooks(mgr ctrl.Manager, o WebhookOptions) (healthz.Checker, error) {
	var registered atomic.Bool
	register := func() error {
		if err := webhook.Setup(mgr); err != nil {
			return fmt.Errorf("set up webhooks: %w", err)
		}
		registered.Store(true)
		return nil
	}
	switch o.CertManagement {
	case CertsExternal:
		if err := register(); err != nil {
			return nil, err
		}
	case CertsSelf:
		ready, err := webhook.AddCertRotation(mgr, o.Cert)
		if err != nil {
			return nil, err
		}
		// The webhook server is added to the manager when first asked for, and reads its
		// certificate when it starts: so register only once the rotator wrote it.
		if err := webhook.RunWhenReady(mgr, ready, register); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown certificate management %q (want %q or %q)", o.CertManagement, CertsSelf, CertsExternal)
	}
	return func(req *http.Request) error {
		if !registered.Load() {
			return errors.New("webhook serving certificate not ready yet")
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	}, nil
}
