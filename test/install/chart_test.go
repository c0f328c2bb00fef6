package install

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1alpha1"
	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/testutil"
)

const (
	dbCRD     = "customresourcedefinition/databaseclusters.mooring.dev"
	userNS    = "shop"
	releaseNS = "platform"
	// portalNS is portal.namespace's default: the chart creates it, restricted.
	portalNS = "mooring-portal"
)

// values are what a platform team would set (the portal and the dashboards on; the
// ServiceMonitor and PrometheusRule would need prometheus-operator's CRDs), plus a
// nodeSelector that keeps the operator's pods Pending (see the package doc).
var values = map[string]any{
	"nodeSelector": map[string]any{"mooring.dev/install-test": "no-such-node"},
	"portal":       map[string]any{"enabled": true},
	"metrics":      map[string]any{"dashboards": map[string]any{"enabled": true}},
	// Accepted by the API server; enforcing them takes a network plugin the test has not.
	"networkPolicy": map[string]any{"enabled": true},
}

// databaseClusters are created while the CRD stores v1alpha1, through both versions.
var databaseClusters = map[string]string{
	"old": "apiVersion: mooring.dev/v1alpha1\nkind: DatabaseCluster\nmetadata:\n  name: old\nspec:\n  engine: postgresql\n  replicas: 2\n  version: \"18\"\n",
	// Fields v1alpha1 lacks travel through its storage in an annotation.
	"new": "apiVersion: mooring.dev/v1beta1\nkind: DatabaseCluster\nmetadata:\n  name: new\nspec:\n  engine: mysql\n  replicaCount: 3\n  storage:\n    size: 2Gi\n  deletionPolicy: Delete\n  secretName: new-db\n",
}

// TestInstallUpgradeUninstall plays a platform team's life with the chart: install the
// previous release (whose DatabaseCluster CRD stores v1alpha1) into a namespace enforcing
// the restricted Pod Security Standard, create DatabaseClusters through both versions,
// upgrade to this chart (the CRD now stores v1beta1), roll the operator, and uninstall.
// After the upgrade every object must still be served in both versions; after the rollout
// the new operator must have rewritten every stored object as v1beta1 (read from etcd)
// and trimmed status.storedVersions, nothing lost; after uninstall the CRDs and the
// DatabaseClusters must remain.
func TestInstallUpgradeUninstall(t *testing.T) {
	ctx := context.Background()
	suite.MustRun(t, "create", "namespace", releaseNS)
	suite.MustRun(t, "label", "namespace", releaseNS, "pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")
	suite.MustRun(t, "create", "namespace", userNS)

	prev := helmInstall(t, releaseNS, previousChart(t), values)
	checkAccepted(t, prev.Manifest)
	checkPodsAdmitted(t)
	op := startChartOperator(t, releaseNS, prev.Manifest, "mooring.log")
	t.Cleanup(func() { _ = op.Stop() })
	if err := testutil.Poll(time.Minute, func() error { return devenv.WebhooksReady(ctx, suite.Config) }); err != nil {
		t.Fatalf("the operator did not inject its CA into the chart's webhooks and CRD: %v", err)
	}
	// The chart ships the certificate Secret empty; filling it must not trip the rotator.
	checkNoErrors(t, filepath.Join(suite.StateDir, "mooring.log"), "cert-rotation")
	suite.WaitField(t, 30*time.Second, "", dbCRD, ".status.storedVersions", `["v1alpha1"]`)
	for _, manifest := range databaseClusters {
		suite.Apply(t, userNS, manifest) // through the chart's webhooks, served on the host
	}
	checkStoredAs(t, "mooring.dev/v1alpha1")
	before := readBothVersions(t)

	cur := helmUpgrade(t, releaseNS, loadChart(t, filepath.Join(suite.Root, "charts", "mooring")), values)
	checkAccepted(t, cur.Manifest)
	// The upgrade applied CRDs and webhook configurations without a caBundle: it must have
	// kept the operator's, or nothing could be converted or admitted.
	if err := devenv.WebhooksReady(ctx, suite.Config); err != nil {
		t.Fatalf("the upgrade blanked a CA bundle: %v", err)
	}
	suite.WaitField(t, 30*time.Second, "", dbCRD, ".status.storedVersions", `["v1alpha1","v1beta1"]`)
	checkSame(t, "after the upgrade, before the rollout", before, readBothVersions(t))
	// Objects may still be stored as v1alpha1, so the API server must refuse to drop it.
	if out, err := suite.Run(dropV1alpha1("--dry-run=server")...); err == nil || !strings.Contains(err.Error(), "storedVersions") {
		t.Fatalf("dropping v1alpha1 before the migration: err=%v, output %q; want a refusal naming storedVersions", err, out)
	}

	// The Deployment's image changed, so its pods roll: the old operator goes, and the new
	// one must become ready alone, then migrate the stored objects. While no operator runs,
	// the API server restarts (as in a control-plane upgrade): its watch cache then reads
	// the v1alpha1-stored objects from etcd again and must convert them to v1beta1, so
	// the new operator's cache can sync only through its own conversion webhook.
	if a, b := deploymentImage(t, prev.Manifest), deploymentImage(t, cur.Manifest); a == b {
		t.Fatalf("the upgrade left the image at %s; the test expects a rollout", a)
	}
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := suite.Cluster.Restart(ctx, "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	op = startChartOperator(t, releaseNS, cur.Manifest, "mooring-upgraded.log")
	suite.WaitField(t, 2*time.Minute, "", dbCRD, ".status.storedVersions", `["v1beta1"]`)
	checkStoredAs(t, "mooring.dev/v1beta1")
	checkSame(t, "after the storage version migration", before, readBothVersions(t))

	// What the migration is for: the next release can drop v1alpha1 from the CRD, and
	// every object is still there, unchanged, through v1beta1.
	suite.MustRun(t, dropV1alpha1()...)
	suite.WaitField(t, 30*time.Second, "", dbCRD, ".spec.versions[*].name", "v1beta1")
	for name := range databaseClusters {
		if out, err := suite.Run("get", "databaseclusters.v1alpha1.mooring.dev", "-n", userNS, name); err == nil {
			t.Errorf("v1alpha1 is still served after it was dropped: %s", out)
		}
	}
	checkSame(t, "after v1alpha1 was dropped", onlyV1beta1(before), readVersions(t, "v1beta1"))

	// Uninstall: the operator's pods go first (the release deletes its RBAC too).
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	helmUninstall(t, releaseNS)
	checkUninstalled(t, cur.Manifest, before)
}

// checkAccepted fails unless every object of a release manifest exists on the API server.
func checkAccepted(t *testing.T, manifest string) {
	t.Helper()
	objs := manifestObjects(t, manifest)
	for _, u := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := suite.Client.Get(context.Background(), client.ObjectKeyFromObject(u), got); err != nil {
			t.Errorf("%s %s of the release: %v", u.GetKind(), u.GetName(), err)
		}
	}
	t.Logf("all %d objects of the release are on the API server: %v", len(objs), manifestKinds(t, manifest))
}

// checkPodsAdmitted waits for the pods of the operator's and the portal's Deployments:
// both namespaces enforce the restricted Pod Security Standard (the release's as the test
// made it, the portal's as the chart makes it), so pods exist only if the chart's pod
// templates pass it.
func checkPodsAdmitted(t *testing.T) {
	t.Helper()
	for app, ns := range map[string]string{"mooring": releaseNS, "mooring-portal": portalNS} {
		testutil.Eventually(t, time.Minute, "2 "+app+" pods admitted in the restricted namespace "+ns, func() error {
			out, err := suite.Run("get", "pods", "-n", ns, "-l", "app.kubernetes.io/name="+app, "-o", "name")
			if err != nil {
				return err
			}
			if n := len(strings.Fields(out)); n != 2 {
				events, _ := suite.Run("get", "events", "-n", ns, "--field-selector", "reason=FailedCreate", "-o", "jsonpath={.items[*].message}")
				return fmt.Errorf("%d pods; FailedCreate events: %s", n, events)
			}
			return nil
		})
	}
}

// checkStoredAs waits until etcd holds every DatabaseCluster encoded as apiVersion.
func checkStoredAs(t *testing.T, apiVersion string) {
	t.Helper()
	for name := range databaseClusters {
		key := "/registry/mooring.dev/databaseclusters/" + userNS + "/" + name
		testutil.Eventually(t, time.Minute, key+" stored as "+apiVersion, func() error {
			got, err := storedAPIVersion(t, key)
			if err == nil && got != apiVersion {
				err = fmt.Errorf("stored as %s", got)
			}
			return err
		})
	}
}

// readBothVersions returns what users wrote of every DatabaseCluster (uid, labels,
// annotations, spec) as each version serves it, by "<version>/<name>". Left out: status,
// which the operator keeps changing, and the annotation in which v1alpha1 carries the
// spec fields only v1beta1 has: it is derived from the v1beta1 object,
// whose spec is compared in full.
func readBothVersions(t *testing.T) map[string]map[string]any {
	t.Helper()
	return readVersions(t, "v1alpha1", "v1beta1")
}

// readVersions is readBothVersions through the given versions only.
func readVersions(t *testing.T, versions ...string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, version := range versions {
		for name := range databaseClusters {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(schema.GroupVersionKind{Group: "mooring.dev", Version: version, Kind: "DatabaseCluster"})
			if err := suite.Client.Get(context.Background(), client.ObjectKey{Namespace: userNS, Name: name}, u); err != nil {
				t.Fatalf("get %s DatabaseCluster %s: %v", version, name, err)
			}
			out[version+"/"+name] = userFields(u)
		}
	}
	return out
}

// onlyV1beta1 keeps the v1beta1 entries of readBothVersions' result.
func onlyV1beta1(all map[string]map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for key, fields := range all {
		if strings.HasPrefix(key, "v1beta1/") {
			out[key] = fields
		}
	}
	return out
}

// dropV1alpha1 is the kubectl command that removes v1alpha1 from the DatabaseCluster CRD,
// as a release after the migration would; the test operation makes it fail rather than
// remove another version if the order of versions ever changes.
func dropV1alpha1(flags ...string) []string {
	return append([]string{"patch", dbCRD, "--type=json", "-p",
		`[{"op":"test","path":"/spec/versions/0/name","value":"v1alpha1"},{"op":"remove","path":"/spec/versions/0"}]`}, flags...)
}

func userFields(u *unstructured.Unstructured) map[string]any {
	annotations := u.GetAnnotations()
	delete(annotations, v1alpha1.ConversionAnnotation)
	return map[string]any{"uid": u.GetUID(), "labels": u.GetLabels(), "annotations": annotations, "spec": u.Object["spec"]}
}

func checkSame(t *testing.T, when string, before, after map[string]map[string]any) {
	t.Helper()
	for key, b := range before {
		if !reflect.DeepEqual(b, after[key]) {
			t.Errorf("%s, DatabaseCluster %s changed:\nbefore %v\nafter  %v", when, key, b, after[key])
		}
	}
}

// deploymentImage is the image of the Deployment in a release manifest.
func deploymentImage(t *testing.T, manifest string) string {
	t.Helper()
	for _, u := range manifestObjects(t, manifest) {
		if u.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			return fmt.Sprint(containers[0].(map[string]any)["image"])
		}
	}
	t.Fatal("no Deployment in the release manifest")
	return ""
}

// checkUninstalled expects the release's objects gone except its CRDs (crds.keep), and
// every DatabaseCluster still there as it was.
func checkUninstalled(t *testing.T, manifest string, before map[string]map[string]any) {
	t.Helper()
	kept := 0
	for _, u := range manifestObjects(t, manifest) {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		kept++
		if _, err := suite.Run("get", "customresourcedefinition", u.GetName()); err != nil {
			t.Errorf("uninstall deleted CRD %s: %v", u.GetName(), err)
		}
	}
	if kept == 0 {
		t.Error("the release had no CRDs")
	}
	// The portal's namespace holds its users' password hashes and its signing keys.
	if phase, err := suite.Run("get", "namespace", portalNS, "-o", "jsonpath={.status.phase}"); err != nil || phase != "Active" {
		t.Errorf("uninstall deleted the portal's namespace %s: phase %q, %v", portalNS, phase, err)
	}
	testutil.Eventually(t, time.Minute, "the release's Deployment deleted", func() error {
		out, err := suite.Run("get", "deployments", "-n", releaseNS, "-o", "name")
		if err != nil {
			return err
		}
		if out != "" {
			return fmt.Errorf("deployments left: %q", out)
		}
		return nil
	})
	// Only v1beta1, the storage version: serving v1alpha1 needs the conversion webhook,
	// which left with the release.
	for name := range databaseClusters {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "mooring.dev", Version: "v1beta1", Kind: "DatabaseCluster"})
		if err := suite.Client.Get(context.Background(), client.ObjectKey{Namespace: userNS, Name: name}, u); err != nil {
			t.Errorf("DatabaseCluster %s after uninstall: %v", name, err)
			continue
		}
		if got := userFields(u); !reflect.DeepEqual(got, before["v1beta1/"+name]) {
			t.Errorf("DatabaseCluster %s after uninstall: %v, was %v", name, got, before["v1beta1/"+name])
		}
	}
	t.Logf("uninstalled; %d CRDs and %d DatabaseClusters kept", kept, len(databaseClusters))
}

// checkNoErrors fails for every error-level line of logger in an operator's JSON log.
func checkNoErrors(t *testing.T, path, logger string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var entry struct{ Level, Logger, Msg, Error string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Level == "error" && entry.Logger == logger {
			t.Errorf("the operator logged an error from %s: %s: %s", logger, entry.Msg, entry.Error)
		}
	}
}
