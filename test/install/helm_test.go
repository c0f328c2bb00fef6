package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// releaseName is the name every test installs the chart under.
const releaseName = "mooring"

// helmTimeout bounds each Helm operation; none waits for pods (they stay Pending).
const helmTimeout = 2 * time.Minute

// helmConfig is the Helm library's client for namespace ns, acting as the cluster admin.
func helmConfig(t *testing.T, ns string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig := suite.Cluster.KubeconfigPath
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &ns
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, ns, "secret"); err != nil {
		t.Fatalf("helm configuration: %v", err)
	}
	return cfg
}

// helmInstall is `helm install mooring <dir> -n ns --values vals` (server-side apply, Helm
// v4's default), waiting for nothing but hooks.
func helmInstall(t *testing.T, ns string, ch *chart.Chart, vals map[string]any) *release.Release {
	t.Helper()
	in := action.NewInstall(helmConfig(t, ns))
	in.ReleaseName, in.Namespace = releaseName, ns
	in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, helmTimeout
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	rel, err := in.RunWithContext(ctx, ch, vals)
	if err != nil {
		t.Fatalf("helm install %s %s: %v", ch.Name(), ch.Metadata.Version, err)
	}
	return asRelease(t, rel)
}

// helmUpgrade is `helm upgrade mooring <dir> -n ns --values vals`.
func helmUpgrade(t *testing.T, ns string, ch *chart.Chart, vals map[string]any) *release.Release {
	t.Helper()
	up := action.NewUpgrade(helmConfig(t, ns))
	up.Namespace = ns
	up.WaitStrategy, up.Timeout = kube.HookOnlyStrategy, helmTimeout
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	rel, err := up.RunWithContext(ctx, releaseName, ch, vals)
	if err != nil {
		t.Fatalf("helm upgrade to %s %s: %v", ch.Name(), ch.Metadata.Version, err)
	}
	return asRelease(t, rel)
}

// helmUninstall is `helm uninstall mooring -n ns`.
func helmUninstall(t *testing.T, ns string) {
	t.Helper()
	un := action.NewUninstall(helmConfig(t, ns))
	un.WaitStrategy, un.Timeout = kube.HookOnlyStrategy, helmTimeout
	if _, err := un.Run(releaseName); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
}

func asRelease(t *testing.T, r any) *release.Release {
	t.Helper()
	rel, ok := r.(*release.Release)
	if !ok {
		t.Fatalf("helm returned a %T, want a *release.Release", r)
	}
	return rel
}

// loadChart loads the chart in dir.
func loadChart(t *testing.T, dir string) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatalf("load chart %s: %v", dir, err)
	}
	return ch
}

// storageLine is the storage flag of a version of the generated DatabaseCluster CRD.
var storageLine = regexp.MustCompile(`(?m)^    storage: (true|false)$`)

// previousChart writes a copy of charts/mooring as the release before this one: version
// and appVersion 0.0.9 (so its Deployment runs another image) and a DatabaseCluster CRD
// that stores v1alpha1, as Mooring did before v1beta1 became the storage version.
func previousChart(t *testing.T) *chart.Chart {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mooring")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(suite.Root, "charts", "mooring"))); err != nil {
		t.Fatal(err)
	}
	edit := func(name string, change func(string) string) {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(change(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("Chart.yaml", func(s string) string {
		s = regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(s, "version: 0.0.9")
		return regexp.MustCompile(`(?m)^appVersion: .*$`).ReplaceAllString(s, `appVersion: "0.0.9"`)
	})
	edit("templates/generated/customresourcedefinition-databaseclusters.mooring.dev.yaml", func(s string) string {
		// Versions are ordered v1alpha1, v1beta1 (controller-gen sorts them).
		if got := storageLine.FindAllString(s, -1); fmt.Sprint(got) != "[    storage: false     storage: true]" {
			t.Fatalf("DatabaseCluster CRD storage flags %q, want v1alpha1 false then v1beta1 true", got)
		}
		i := 0
		return storageLine.ReplaceAllStringFunc(s, func(string) string {
			i++
			return "    storage: " + map[int]string{1: "true", 2: "false"}[i]
		})
	})
	return loadChart(t, dir)
}

// manifestObjects decodes a release manifest.
func manifestObjects(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decode release manifest: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// chartArgs are the operator arguments of the Deployment in a release manifest.
func chartArgs(t *testing.T, manifest string) []string {
	t.Helper()
	for _, u := range manifestObjects(t, manifest) {
		if u.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		if len(containers) != 1 {
			t.Fatalf("the chart's Deployment has %d containers, want 1", len(containers))
		}
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		return args
	}
	t.Fatal("no Deployment in the release manifest")
	return nil
}

// manifestKinds counts the objects of a release manifest by kind.
func manifestKinds(t *testing.T, manifest string) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	for _, u := range manifestObjects(t, manifest) {
		kinds[u.GetKind()]++
	}
	return kinds
}
