package devenv_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/webhook"
)

// A cluster where the chart was uninstalled keeps the CRDs (crds.keep), converting
// through the deleted release's Service. Install (make dev-up) points the conversion at
// this host instead of failing on "exactly one of url or service is required".
func TestInstallOverAChartsCRD(t *testing.T) {
	testutil.RequireTier(t, testutil.Integration)
	env := &envtest.Environment{BinaryAssetsDirectory: testutil.AssetsDir()}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.RepoRoot()
	f, err := os.Open(filepath.Join(root, "config", "crd", "bases", "mooring.dev_databaseclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read only
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(crd); err != nil {
		t.Fatal(err)
	}
	if crd.Name != webhook.ConversionCRDName {
		t.Fatalf("read CRD %s, want %s", crd.Name, webhook.ConversionCRDName)
	}
	// As the chart installs it.
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
				Namespace: "platform", Name: "mooring-webhook-service", Path: ptrTo("/convert")}},
		},
	}
	ctx := context.Background()
	if err := c.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if err := devenv.Install(ctx, cfg, root, 9443); err != nil {
		t.Fatalf("Install over the chart's CRD: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
		t.Fatal(err)
	}
	cc := crd.Spec.Conversion.Webhook.ClientConfig
	if cc.Service != nil || cc.URL == nil || *cc.URL != "https://localhost:9443/convert" {
		t.Fatalf("conversion client config %+v, want only the URL https://localhost:9443/convert", cc)
	}
}

func ptrTo[T any](v T) *T { return &v }
