package devenv

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/webhook"
)

// The production manifests (kubectl apply -k config/default) render, and name the webhook
// configurations and the conversion CRD the way the operator's CA injection expects.
func TestProductionManifestsRender(t *testing.T) {
	testutil.RequireTools(t, "kubectl")
	root := testutil.RepoRoot()
	out, err := exec.Command(filepath.Join(root, "bin", "k8s", "kubectl"), "kustomize", filepath.Join(root, "config", "default")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v\n%s", err, out)
	}
	docs, err := readDocsFrom(string(out))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range docs {
		names[d.GetKind()+"/"+d.GetName()] = true
		if d.GetKind() == "ClusterRole" || d.GetKind() == "Role" {
			rules, _ := json.Marshal(d.Object["rules"])
			if strings.Contains(string(rules), `"*"`) {
				t.Errorf("%s %s grants a wildcard: %s", d.GetKind(), d.GetName(), rules)
			}
		}
	}
	for _, want := range []string{
		"MutatingWebhookConfiguration/" + webhook.MutatingConfigName,
		"ValidatingWebhookConfiguration/" + webhook.ValidatingConfigName,
		"CustomResourceDefinition/" + webhook.ConversionCRDName,
		"Secret/" + SecretName,
		"Service/mooring-webhook-service",
		"Deployment/mooring-controller-manager",
		"ClusterRole/mooring-admin", "ClusterRole/mooring-developer", "ClusterRole/mooring-auditor",
	} {
		if !names[want] {
			t.Errorf("config/default renders no %s", want)
		}
	}
	if !strings.Contains(string(out), "path: /convert") {
		t.Error("the DatabaseCluster CRD has no conversion webhook in config/default")
	}
}

// The cert-manager overlay renders: cert-manager injects the CA into both webhook
// configurations and the conversion CRD, and Mooring leaves certificates alone.
func TestCertManagerOverlayRenders(t *testing.T) {
	testutil.RequireTools(t, "kubectl")
	root := testutil.RepoRoot()
	out, err := exec.Command(filepath.Join(root, "bin", "k8s", "kubectl"), "kustomize", filepath.Join(root, "config", "certmanager")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize config/certmanager: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "cert-manager.io/inject-ca-from: mooring-system/mooring-serving-cert"); n != 3 {
		t.Errorf("%d objects get their CA from cert-manager, want 3 (two webhook configurations, the DatabaseCluster CRD)", n)
	}
	if !strings.Contains(string(out), "--webhook-cert-management=external") {
		t.Error("the operator still manages its own certificates under cert-manager")
	}
	checkCAChain(t, string(out))
}

// checkCAChain fails unless the serving certificate is issued by a CA Issuer whose
// certificate is a CA of its own: a self-signed serving certificate would change the
// injected CA bundle at every renewal.
func checkCAChain(t *testing.T, manifests string) {
	t.Helper()
	certs, issuers := map[string]map[string]any{}, map[string]map[string]any{}
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var o struct {
			Kind     string                `json:"kind"`
			Metadata struct{ Name string } `json:"metadata"`
			Spec     map[string]any        `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("decode %q: %v", doc, err)
		}
		switch o.Kind {
		case "Certificate":
			certs[o.Metadata.Name] = o.Spec
		case "Issuer":
			issuers[o.Metadata.Name] = o.Spec
		}
	}
	serving, ok := certs["mooring-serving-cert"]
	if !ok {
		t.Fatalf("no Certificate mooring-serving-cert; have %v", certs)
	}
	ref, _ := serving["issuerRef"].(map[string]any)
	issuerName, _ := ref["name"].(string)
	ca, _ := issuers[issuerName]["ca"].(map[string]any)
	if ca == nil {
		t.Fatalf("the serving certificate's Issuer %q is not a CA Issuer: %v", issuerName, issuers[issuerName])
	}
	for name, spec := range certs {
		if spec["secretName"] == ca["secretName"] {
			if spec["isCA"] != true {
				t.Errorf("Certificate %s, the CA Issuer's secret, is not isCA: %v", name, spec)
			}
			return
		}
	}
	t.Errorf("no Certificate writes the CA Issuer's secret %v", ca["secretName"])
}
