package manager

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// apiServerProbeTimeout bounds the readiness probe's request to the API server.
const apiServerProbeTimeout = 2 * time.Second

// APIServerReachable is a readiness check that fails while the API server does not
// answer its own /readyz: during an outage the operator's caches go stale and its writes
// fail, so it reports not ready, and ready again as soon as the API server is back (its
// watches resume on their own; no restart is needed).
func APIServerReachable(cfg *rest.Config) (healthz.Checker, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server readiness check: %w", err)
	}
	rc := cs.Discovery().RESTClient()
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), apiServerProbeTimeout)
		defer cancel()
		if err := rc.Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			return fmt.Errorf("API server not reachable: %w", err)
		}
		return nil
	}, nil
}
