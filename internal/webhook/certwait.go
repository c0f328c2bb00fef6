package webhook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// certPollInterval is how often a waiting webhook server looks for its certificate.
const certPollInterval = 250 * time.Millisecond

// AwaitCertificate returns s, changed to wait in Start until its certificate and key exist
// before it starts serving (controller-runtime's server fails at once without them).
//
// This keeps the webhook server in the manager's webhooks group, which starts before the
// caches sync. That order is what conversion needs: the manager's DatabaseCluster
// informer lists v1beta1, and objects still stored as v1alpha1 are converted by this very
// server whenever the API server's watch cache (re)reads them from etcd. Registering the
// webhooks only once the rotator had written a certificate (it runs after the caches
// sync) deadlocked an operator started over v1alpha1-stored objects: the cache waited
// for conversion, conversion for the server, the server for the cache. A restarted
// operator finds its certificate on disk (mounted from the Secret, or written from it
// before the manager starts); a fresh install has nothing to convert yet.
func AwaitCertificate(s webhook.Server) webhook.Server {
	return &certWaitingServer{Server: s}
}

type certWaitingServer struct {
	webhook.Server
}

// Start waits for the certificate files, then runs the server.
func (s *certWaitingServer) Start(ctx context.Context) error {
	files := certPaths(s.Server)
	if len(files) > 0 && !allExist(files) {
		ctrl.Log.WithName("webhook").Info("Waiting for the webhook serving certificate", "files", files)
		t := time.NewTicker(certPollInterval)
		defer t.Stop()
		for !allExist(files) {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
	if err := s.Server.Start(ctx); err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}

// certPaths are the certificate and key a controller-runtime server reads, with its
// defaults; none for another implementation, which is started as it is.
func certPaths(s webhook.Server) []string {
	d, ok := s.(*webhook.DefaultServer)
	if !ok {
		return nil
	}
	o := d.Options
	if o.CertDir == "" {
		o.CertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	if o.CertName == "" {
		o.CertName = "tls.crt"
	}
	if o.KeyName == "" {
		o.KeyName = "tls.key"
	}
	return []string{filepath.Join(o.CertDir, o.CertName), filepath.Join(o.CertDir, o.KeyName)}
}

func allExist(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	return true
}
