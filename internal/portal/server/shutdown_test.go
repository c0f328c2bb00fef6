package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/testutil"
)

// TestGracefulShutdown: when its context ends, Serve stops accepting, finishes, returns
// nil, and /readyz answers 503 from then on so a load balancer stops sending.
func TestGracefulShutdown(t *testing.T) {
	env.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := server.New(ctx, baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	serveCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Serve(serveCtx, "127.0.0.1:"+strconv.Itoa(port), "", 10*time.Second) }()
	testutil.Eventually(t, 20*time.Second, "the portal to serve /readyz", func() error {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errorf("readyz %d", resp.StatusCode)
		}
		return nil
	})
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return within 20s of its context ending")
	}
	if _, err := http.Get(url + "/ping"); err == nil {
		t.Fatal("the portal still accepts connections after shutdown")
	}
	w := httptest.NewRecorder()
	s.Handler.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining: want 503, got %d", w.Code)
	}
}
