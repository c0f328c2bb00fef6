package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mooringhq/mooring/internal/testutil"
)

// The API server of the tests that need one (kubeconform's schemas, the deprecation
// warning): envtest's kube-apiserver and etcd from bin/k8s (or $KUBEBUILDER_ASSETS),
// started by the first of them and stopped by TestMain, with the chart's CRDs (rendered
// with the default values) and those of thirdPartyCRDDir installed.
var (
	apiOnce   sync.Once
	apiEnv    *envtest.Environment
	apiConfig *rest.Config
	apiErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if apiEnv != nil {
		if err := apiEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the API server:", err)
		}
	}
	os.Exit(code)
}

// apiServer returns the config of the tests' API server, starting it on first use.
func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	testutil.RequireTier(t, testutil.Integration)
	apiOnce.Do(func() { apiConfig, apiErr = startAPIServer() })
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	return apiConfig
}

func startAPIServer() (*rest.Config, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(repoRoot, "bin", "k8s")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no kube-apiserver in %s: run `make tools` first (or set KUBEBUILDER_ASSETS)", assets)
	}
	// The chart's CRDs as it installs them.
	out, err := render(chartPath, namespace, nil)
	if err != nil {
		return nil, err
	}
	var crds []string
	for _, doc := range docSeparator.Split(out, -1) {
		if strings.Contains(doc, "\nkind: CustomResourceDefinition\n") {
			crds = append(crds, doc)
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("the chart renders no CRD")
	}
	dir, err := os.MkdirTemp("", "mooring-chart-crds-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // read by Start
	if err := os.WriteFile(filepath.Join(dir, "chart.yaml"), []byte("---\n"+strings.Join(crds, "---\n")), 0o600); err != nil {
		return nil, err
	}
	apiEnv = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{dir, filepath.Join(repoRoot, thirdPartyCRDDir)},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := apiEnv.Start()
	if err != nil {
		apiEnv = nil
		return nil, fmt.Errorf("start the API server: %w", err)
	}
	return cfg, nil
}
