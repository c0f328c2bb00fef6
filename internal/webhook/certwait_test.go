package webhook_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
	mooringwebhook "github.com/mooringhq/mooring/internal/webhook"
)

// TestAwaitCertificate: without its certificate, controller-runtime's server fails to
// start; wrapped, it waits, unready, and serves once the files appear.
func TestAwaitCertificate(t *testing.T) {
	dir := t.TempDir()
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	opts := webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}
	// It fails at once when it fails; a server that starts would serve until its context
	// ends, so one still running at the deadline is the failure (not a hung test).
	bare, stopBare := context.WithCancel(context.Background())
	bareDone := make(chan error, 1)
	go func() { bareDone <- webhook.NewServer(opts).Start(bare) }()
	select {
	case err := <-bareDone:
		stopBare()
		if err == nil {
			t.Fatal("controller-runtime's server returned no error without a certificate; the wrapper would be pointless")
		}
	case <-time.After(10 * time.Second):
		stopBare()
		// Wait for it to let go of the port the wrapped server below needs.
		err := <-bareDone
		t.Fatalf("controller-runtime's server was still running 10s after Start without a certificate (stopped, it returned %v), want an error at once; the wrapper would be pointless", err)
	}

	srv := mooringwebhook.AwaitCertificate(webhook.NewServer(opts))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	ready := func() error { return srv.StartedChecker()(httptest.NewRequest("GET", "/readyz", nil)) }
	if ready() == nil {
		t.Fatal("ready without a certificate")
	}

	crt, key, err := certutil.GenerateSelfSignedCertKey("localhost", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "the webhook server serving once its certificate exists", func() error {
		select {
		case err := <-done:
			done <- err
			return errors.Join(errors.New("Start returned"), err)
		default:
		}
		return ready()
	})
}
