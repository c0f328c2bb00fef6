package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mooringhq/mooring/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const repoRoot = "../.."

var chartPath = filepath.Join(repoRoot, chartDir)

// TestGeneratedTemplatesAreCurrent fails when config/ changed (say a new RBAC marker and
// `make manifests`) without `make chart` regenerating the chart's templates.
func TestGeneratedTemplatesAreCurrent(t *testing.T) {
	testutil.RequireTools(t, "kubectl")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := filepath.Glob(filepath.Join(root, generatedDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range onDisk {
		name := filepath.Base(path)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := want[name]; !ok {
			t.Errorf("%s/%s is no longer generated from config/default", generatedDir, name)
		} else if !bytes.Equal(got, w) {
			t.Errorf("%s/%s is stale", generatedDir, name)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("%s/%s is missing", generatedDir, name)
	}
	if t.Failed() {
		t.Log("run `make chart` and commit the result")
	}
}

// helmLabels are the labels the chart adds to what config/default installs.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/part-of"}

// TestChartMatchesKustomize renders the chart into mooring-system and expects exactly the
// objects kustomize renders from the config/ directories the values switch on, field for
// field, apart from Helm's labels, the keep annotation on CRDs and the Namespaces (which
// `helm install --namespace` owns; the portal's objects move into the release namespace).
func TestChartMatchesKustomize(t *testing.T) {
	testutil.RequireTools(t, "kubectl")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	// The kustomizations pin images by their images: entries or files.
	image := map[string]any{"tag": "latest"}
	tests := map[string]struct {
		vals map[string]any
		dirs []string
		// only takes just these kinds from the last of dirs.
		only []string
		// portalInRelease: portal.namespace is empty, so the portal's objects move
		// into the release namespace.
		portalInRelease bool
	}{
		// Metrics are on by default, and so is their reader ClusterRole.
		"default": {map[string]any{"image": image}, []string{"config/default", "config/prometheus"}, []string{"ClusterRole"}, false},
		"everything on": {map[string]any{
			"image": image,
			"metrics": map[string]any{
				"serviceMonitor": map[string]any{"enabled": true},
				"podMonitor":     map[string]any{"enabled": true},
				"prometheusRule": map[string]any{"enabled": true},
				"dashboards":     map[string]any{"enabled": true},
			},
			// config/portal names the chart's default repository too (its images: entry).
			"portal": map[string]any{"enabled": true, "image": map[string]any{"tag": "latest"}},
		}, []string{"config/default", "config/prometheus", "config/grafana", "config/portal"}, nil, false},
		"portal in the release namespace": {map[string]any{
			"image": image,
			"metrics": map[string]any{
				"serviceMonitor": map[string]any{"enabled": true},
				"podMonitor":     map[string]any{"enabled": true},
				"prometheusRule": map[string]any{"enabled": true},
			},
			"portal": map[string]any{"enabled": true, "namespace": "", "image": map[string]any{"tag": "latest"}},
		}, []string{"config/default", "config/prometheus", "config/portal"}, nil, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var kust []*unstructured.Unstructured
			for i, dir := range tc.dirs {
				objs, err := kustomize(root, dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, u := range objs {
					if i < len(tc.dirs)-1 || tc.only == nil || slices.Contains(tc.only, u.GetKind()) {
						kust = append(kust, u)
					}
				}
			}
			out, err := render(chartPath, namespace, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			rendered, err := decode([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			compare(t, index(t, rendered, true), index(t, intoRelease(kust, tc.portalInRelease), false))
		})
	}
}

// intoRelease drops the Namespace the release namespace replaces and, with portal, moves
// the portal's objects (and references to them) into it too.
func intoRelease(objs []*unstructured.Unstructured, portal bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "Namespace" && (u.GetName() == namespace || portal && u.GetName() == "mooring-portal") {
			continue
		}
		if !portal {
			out = append(out, u)
			continue
		}
		if u.GetNamespace() == "mooring-portal" {
			u.SetNamespace(namespace)
		}
		if u.GetKind() == "ValidatingAdmissionPolicy" {
			// The portal's namespace, which no user may be granted, is the release's.
			vars, _, _ := unstructured.NestedSlice(u.Object, "spec", "variables")
			for _, v := range vars {
				if m := v.(map[string]any); m["name"] == "protectedNamespaces" {
					m["expression"] = strings.ReplaceAll(m["expression"].(string), "'mooring-portal'", "'"+namespace+"'")
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, vars, "spec", "variables")
		}
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, s := range subjects {
			if m := s.(map[string]any); m["namespace"] == "mooring-portal" {
				m["namespace"] = namespace
			}
		}
		if subjects != nil {
			_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
		}
		out = append(out, u)
	}
	return out
}

// compare reports every object that differs or is only on one side.
func compare(t *testing.T, chart, want map[string]map[string]any) {
	t.Helper()
	for key, w := range want {
		got, ok := chart[key]
		if !ok {
			t.Errorf("%s is in config/ but not in the chart", key)
			continue
		}
		if !reflect.DeepEqual(got, w) {
			g, _ := json.MarshalIndent(got, "", " ")
			k, _ := json.MarshalIndent(w, "", " ")
			t.Errorf("%s differs:\nchart:     %s\nkustomize: %s", key, g, k)
		}
		delete(chart, key)
	}
	for key := range chart {
		t.Errorf("%s is in the chart's render but not in config/", key)
	}
}

// index keys objects by kind/namespace/name; chart objects lose what Helm adds.
func index(t *testing.T, objs []*unstructured.Unstructured, fromChart bool) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, u := range objs {
		if fromChart {
			labels := u.GetLabels()
			for _, l := range helmLabels {
				delete(labels, l)
			}
			u.SetLabels(labels)
			annotations := u.GetAnnotations()
			delete(annotations, "helm.sh/resource-policy")
			u.SetAnnotations(annotations)
		}
		// An empty (or null) map is no map.
		for _, field := range []string{"labels", "annotations"} {
			if m, _, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", field); m == nil || len(m.(map[string]any)) == 0 {
				unstructured.RemoveNestedField(u.Object, "metadata", field)
			}
		}
		key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		if _, dup := out[key]; dup {
			t.Errorf("%s twice", key)
		}
		out[key] = u.Object
	}
	return out
}

// TestLintStrict is `helm lint --strict` with several value sets. (Lint renders in lint
// mode, where a template's fail is only logged: the capability checks of validate.yaml
// do not stop it.)
func TestLintStrict(t *testing.T) {
	for name, vals := range valueSets() {
		l := action.NewLint()
		l.Strict = true
		l.Namespace = namespace
		res := l.Run([]string{chartPath}, vals)
		for _, m := range res.Messages {
			t.Errorf("%s: %s", name, m)
		}
		for _, err := range res.Errors {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func valueSets() map[string]map[string]any {
	return map[string]map[string]any{
		"default": {},
		"cert-manager-monitoring": {
			"replicas":     3,
			"image":        map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)},
			"logLevel":     "debug",
			"extraArgs":    []any{"--max-concurrent-reconciles=8"},
			"env":          []any{map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"}},
			"nodeSelector": map[string]any{"kubernetes.io/os": "linux"},
			"tolerations":  []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}},
			"webhook":      map[string]any{"certManagement": "cert-manager"},
			"metrics":      map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}},
		},
		"observability-portal": {
			"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
			"networkPolicy": map[string]any{"enabled": true,
				"metricsFrom": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}},
				"portalFrom":  []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "ingress-nginx"}}}},
			},
			"metrics": map[string]any{
				"readerSubjects": []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-kube-prometheus-prometheus", "namespace": "monitoring"},
					map[string]any{"kind": "Group", "name": "metrics-scrapers"}},
				"serviceMonitor": map[string]any{"enabled": true, "interval": "1m", "labels": map[string]any{"release": "prometheus"}},
				"podMonitor":     map[string]any{"enabled": true, "interval": "15s", "labels": map[string]any{"release": "prometheus"}},
				"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
				"dashboards":     map[string]any{"enabled": true, "namespace": "grafana", "labels": map[string]any{"team": "platform"}},
			},
			"portal": map[string]any{"enabled": true, "replicas": 3, "image": map[string]any{"tag": "v0.1.0"},
				"trustedProxies": []any{"10.0.0.0/8", "192.168.1.10"},
				"extraArgs":      []any{"--access-token-ttl=5m", "--log-level=debug"},
				"resources":      map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "96Mi"}, "limits": map[string]any{"memory": "192Mi"}},
				"nodeSelector":   map[string]any{"kubernetes.io/os": "linux"},
				"tolerations":    []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}},
				"affinity": map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
					"weight": int64(100), "podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname",
						"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "mooring-portal"}}}}}}},
			},
		},
		"minimal": {
			"replicas": 1,
			"crds":     map[string]any{"enabled": false},
			"metrics":  map[string]any{"enabled": false},
		},
	}
}

// TestGoldenRenders compares renders of a few value sets, CRDs left out (the drift test
// covers them), with testdata/<set>.yaml; go test -update rewrites them.
func TestGoldenRenders(t *testing.T) {
	for name, vals := range valueSets() {
		t.Run(name, func(t *testing.T) {
			out, err := render(chartPath, "platform", vals)
			if err != nil {
				t.Fatal(err)
			}
			checkRender(t, out)
			golden(t, name, withoutCRDs(out))
		})
	}
}

// TestSchemaRejectsWrongValues expects values.schema.json to reject each bad value with
// a message naming it.
func TestSchemaRejectsWrongValues(t *testing.T) {
	tests := map[string]struct {
		vals map[string]any
		name string
	}{
		"replicas type":        {map[string]any{"replicas": "two"}, "replicas"},
		"negative":             {map[string]any{"replicas": -1}, "replicas"},
		"cert mode":            {map[string]any{"webhook": map[string]any{"certManagement": "vault"}}, "certManagement"},
		"log level":            {map[string]any{"logLevel": "verbose"}, "logLevel"},
		"unknown key":          {map[string]any{"replica": 2}, "replica"},
		"crds.keep":            {map[string]any{"crds": map[string]any{"keep": "yes"}}, "keep"},
		"extra arg":            {map[string]any{"extraArgs": []any{"leader-elect"}}, "extraArgs"},
		"digest":               {map[string]any{"image": map[string]any{"digest": "latest"}}, "digest"},
		"monitor interval":     {map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"interval": "often"}}}, "interval"},
		"pod monitor interval": {map[string]any{"metrics": map[string]any{"podMonitor": map[string]any{"interval": "often"}}}, "interval"},
		"portal replicas":      {map[string]any{"portal": map[string]any{"replicas": "two"}}, "replicas"},
		"portal selector":      {map[string]any{"portal": map[string]any{"nodeSelector": map[string]any{"zone": 3}}}, "nodeSelector"},
		"portal key":           {map[string]any{"portal": map[string]any{"enable": true}}, "enable"},
		"portal arg":           {map[string]any{"portal": map[string]any{"extraArgs": []any{"log-level=debug"}}}, "extraArgs"},
		"portal proxy":         {map[string]any{"portal": map[string]any{"trustedProxies": []any{"ingress.example.com"}}}, "trustedProxies"},
		"env name":             {map[string]any{"env": []any{map[string]any{"value": "x"}}}, "env"},
		"reader kind":          {map[string]any{"metrics": map[string]any{"readerSubjects": []any{map[string]any{"kind": "Robot", "name": "x"}}}}, "readerSubjects"},
		"reader without namespace": {map[string]any{"metrics": map[string]any{"readerSubjects": []any{
			map[string]any{"kind": "ServiceAccount", "name": "prometheus"}}}}, "readerSubjects"},
		"user with namespace": {map[string]any{"metrics": map[string]any{"readerSubjects": []any{
			map[string]any{"kind": "User", "name": "jane", "namespace": "monitoring"}}}}, "readerSubjects"},
		"spread":                  {map[string]any{"spreadAcrossNodes": "yes"}, "spreadAcrossNodes"},
		"portal pdb":              {map[string]any{"portal": map[string]any{"podDisruptionBudget": map[string]any{"enable": true}}}, "enable"},
		"topology spread entries": {map[string]any{"topologySpreadConstraints": map[string]any{"maxSkew": 1}}, "topologySpreadConstraints"},
	}
	for name, tc := range tests {
		_, err := render(chartPath, namespace, tc.vals)
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: %v, want a schema error naming %s", name, err, tc.name)
		}
	}
}

// TestValuesThatCannotWorkFail expects a render of value combinations that would install
// something broken to fail with a message naming what to set.
func TestValuesThatCannotWorkFail(t *testing.T) {
	rule := map[string]any{"enabled": true}
	tests := map[string]struct {
		vals map[string]any
		want string
		// apis are the API versions the cluster serves besides the built-in ones.
		apis []string
	}{
		// MooringOperatorDown is absent(up{job="mooring-metrics-service"} == 1): with
		// nothing scraping the operator it fires forever.
		"rules without the ServiceMonitor": {map[string]any{"metrics": map[string]any{"prometheusRule": rule}},
			"metrics.prometheusRule.enabled needs metrics.enabled and metrics.serviceMonitor.enabled", thirdPartyAPIs},
		"rules without metrics": {map[string]any{"metrics": map[string]any{"enabled": false, "prometheusRule": rule,
			"serviceMonitor": map[string]any{"enabled": true}}}, "MooringOperatorDown", thirdPartyAPIs},
		// Rather than Helm's "no matches for kind ServiceMonitor".
		"ServiceMonitor without prometheus-operator": {map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}},
			"metrics.serviceMonitor.enabled needs prometheus-operator's CRDs (ServiceMonitor, PodMonitor, PrometheusRule: monitoring.coreos.com/v1), which this cluster does not serve. Install them first (kube-prometheus-stack, or the prometheus-operator-crds chart), or set metrics.serviceMonitor.enabled=false.", []string{"cert-manager.io/v1"}},
		"PodMonitor without prometheus-operator": {map[string]any{"metrics": map[string]any{"podMonitor": map[string]any{"enabled": true}}},
			"metrics.podMonitor.enabled needs prometheus-operator's CRDs (ServiceMonitor, PodMonitor, PrometheusRule: monitoring.coreos.com/v1), which this cluster does not serve", nil},
		"rules without prometheus-operator": {map[string]any{"metrics": map[string]any{"prometheusRule": rule, "serviceMonitor": map[string]any{"enabled": true}}},
			"or set metrics.serviceMonitor.enabled=false and metrics.prometheusRule.enabled=false.", nil},
		"cert-manager mode without cert-manager": {map[string]any{"webhook": map[string]any{"certManagement": "cert-manager"}},
			"webhook.certManagement=cert-manager needs cert-manager (Issuer, Certificate: cert-manager.io/v1), which this cluster does not serve", []string{"monitoring.coreos.com/v1"}},
		"readers without metrics": {map[string]any{"metrics": map[string]any{"enabled": false,
			"readerSubjects": []any{map[string]any{"kind": "Group", "name": "scrapers"}}}}, "metrics.readerSubjects needs metrics.enabled", nil},
	}
	for name, tc := range tests {
		_, err := renderOn(chartPath, namespace, tc.vals, tc.apis...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	ok := map[string]any{"metrics": map[string]any{"prometheusRule": rule, "serviceMonitor": map[string]any{"enabled": true}}}
	if _, err := render(chartPath, namespace, ok); err != nil {
		t.Errorf("rules with the ServiceMonitor: %v", err)
	}
}

// The portal's flags and pull secrets come from values: portal.trustedProxies becomes
// the portal's --trusted-proxies, portal.extraArgs follow, and the pull secrets are
// portal.imagePullSecrets or else the operator's; portal.sso and portal.localLogin become
// the single sign-on flags and mount; env reaches the operator's container.
func TestPortalAndOperatorValues(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "cmd", "mooring-portal", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `"trusted-proxies"`) {
		t.Fatal("cmd/mooring-portal has no --trusted-proxies flag any more: update the chart's portal.trustedProxies")
	}
	pod := func(t *testing.T, vals map[string]any, name string) map[string]any {
		t.Helper()
		out, err := render(chartPath, namespace, vals)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decode([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objs {
			if u.GetKind() == "Deployment" && u.GetName() == name {
				spec, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
				return spec
			}
		}
		t.Fatalf("no Deployment %s", name)
		return nil
	}
	container := func(spec map[string]any) map[string]any {
		cs, _, _ := unstructured.NestedSlice(spec, "containers")
		return cs[0].(map[string]any)
	}
	pullSecrets := func(spec map[string]any) []any {
		s, _, _ := unstructured.NestedSlice(spec, "imagePullSecrets")
		return s
	}
	regcred := []any{map[string]any{"name": "regcred"}}
	portal := map[string]any{"enabled": true, "trustedProxies": []any{"10.0.0.0/8", "fd00::/8"}, "protectedNamespaces": []any{"monitoring", "vault"}, "extraArgs": []any{"--log-level=debug"}}
	spec := pod(t, map[string]any{"imagePullSecrets": regcred, "portal": portal}, "mooring-portal")
	args, _, _ := unstructured.NestedStringSlice(container(spec), "args")
	want := []string{"--bind-address=:8080", "--metrics-bind-address=:9090", "--admin-password-file=/etc/mooring-portal/admin/password", "--operator-namespace=" + namespace, "--trusted-proxies=10.0.0.0/8,fd00::/8", "--protected-namespaces=monitoring,vault", "--log-level=debug"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("portal args %q, want %q", args, want)
	}
	if got := pullSecrets(spec); !reflect.DeepEqual(got, regcred) {
		t.Errorf("portal imagePullSecrets %v, want the operator's %v", got, regcred)
	}
	own := []any{map[string]any{"name": "portal-registry"}}
	portal["imagePullSecrets"] = own
	if got := pullSecrets(pod(t, map[string]any{"imagePullSecrets": regcred, "portal": portal}, "mooring-portal")); !reflect.DeepEqual(got, own) {
		t.Errorf("portal imagePullSecrets %v, want its own %v", got, own)
	}
	// Single sign-on: its flags, and the client secret's Secret mounted where the flag
	// reads it; local logins off.
	ssoVals := map[string]any{"enabled": true, "localLogin": false, "sso": map[string]any{"issuerURL": "https://idp.example.com",
		"clientID": "portal", "clientSecretName": "oidc", "redirectURL": "https://portal.example.com/ui/sso/callback", "adminGroup": "ops"}}
	spec = pod(t, map[string]any{"portal": ssoVals}, "mooring-portal")
	args, _, _ = unstructured.NestedStringSlice(container(spec), "args")
	want = []string{"--bind-address=:8080", "--metrics-bind-address=:9090", "--admin-password-file=/etc/mooring-portal/admin/password",
		"--operator-namespace=mooring-system", "--oidc-issuer-url=https://idp.example.com", "--oidc-client-id=portal", "--oidc-client-secret-file=/etc/mooring-portal/oidc/client-secret",
		"--oidc-redirect-url=https://portal.example.com/ui/sso/callback", "--oidc-admin-group=ops", "--local-login=false"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("portal args with single sign-on %q, want %q", args, want)
	}
	mounts, _, _ := unstructured.NestedSlice(container(spec), "volumeMounts")
	volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
	if len(mounts) != 2 || mounts[1].(map[string]any)["mountPath"] != "/etc/mooring-portal/oidc" ||
		len(volumes) != 2 || !reflect.DeepEqual(volumes[1], map[string]any{"name": "oidc-client", "secret": map[string]any{"secretName": "oidc"}}) {
		t.Errorf("single sign-on mounts %v and volumes %v, want the Secret oidc at /etc/mooring-portal/oidc", mounts, volumes)
	}

	proxy := map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}
	env, _, _ := unstructured.NestedSlice(container(pod(t, map[string]any{"env": []any{proxy}}, "mooring-controller-manager")), "env")
	if len(env) != 2 || env[0].(map[string]any)["name"] != "POD_NAMESPACE" || !reflect.DeepEqual(env[1], proxy) {
		t.Errorf("operator env %v, want POD_NAMESPACE and %v", env, proxy)
	}
}

// Installed in another namespace than mooring-system, the portal protects the release
// namespace, where the operator runs, as the operator's (--operator-namespace), and the
// policy on direct User edits refuses the namespaces the portal protects: its own, its
// users', the release's and portal.protectedNamespaces. (Before, the portal protected
// mooring-system wherever the operator was, and the policy nothing but kube-*.)
func TestPortalProtectsTheReleaseNamespaces(t *testing.T) {
	vals := map[string]any{"portal": map[string]any{"enabled": true, "namespace": "portal-x", "protectedNamespaces": []any{"vault", "monitoring"}}}
	out, err := render(chartPath, "ops", vals)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	d := find(objs, "Deployment", "mooring-portal")
	if d == nil {
		t.Fatal("no portal Deployment")
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
	if !slices.Contains(args, "--operator-namespace=ops") {
		t.Errorf("portal args %q, want --operator-namespace=ops, the release namespace", args)
	}
	p := find(objs, "ValidatingAdmissionPolicy", "mooring-portal-user-grants")
	if p == nil {
		t.Fatal("no ValidatingAdmissionPolicy mooring-portal-user-grants")
	}
	vars, _, _ := unstructured.NestedSlice(p.Object, "spec", "variables")
	got := ""
	for _, v := range vars {
		if m := v.(map[string]any); m["name"] == "protectedNamespaces" {
			got, _ = m["expression"].(string)
		}
	}
	if want := "['portal-x', 'mooring-portal-users', 'ops', 'vault', 'monitoring']"; got != want {
		t.Errorf("the policy's protectedNamespaces are %q, want %q", got, want)
	}
}

// The images default to the chart's appVersion as their tag, so appVersion must be a
// release tag as the images and the plugin are tagged (vX.Y.Z): kubectl mooring doctor
// compares the plugin's version with the operator image's tag.
func TestAppVersionIsTheImageTag(t *testing.T) {
	ch, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	app := ch.Metadata.AppVersion
	if !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`).MatchString(app) {
		t.Errorf("Chart.yaml appVersion %q is not a release tag vX.Y.Z", app)
	}
	out, err := render(chartPath, namespace, map[string]any{"portal": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, image := range []string{"ghcr.io/mooringhq/mooring:" + app, "ghcr.io/mooringhq/mooring-portal:" + app} {
		if !strings.Contains(out, "image: "+image+"\n") {
			t.Errorf("the default render does not run %s", image)
		}
	}
}

// Chart.yaml's icon points at this repository's main branch: the file must be there.
func TestIconExists(t *testing.T) {
	ch, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "https://raw.githubusercontent.com/mooringhq/mooring/main/"
	icon := ch.Metadata.Icon
	if !strings.HasPrefix(icon, prefix) {
		t.Fatalf("icon %q is not a file of this repository (%s...)", icon, prefix)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, strings.TrimPrefix(icon, prefix)))
	if err != nil {
		t.Fatalf("Chart.yaml icon: %v", err)
	}
	if !strings.Contains(string(data), "<svg") {
		t.Errorf("%s is not an SVG", icon)
	}
}

// The ClusterRole a scraper is bound to comes with the metrics, ServiceMonitor or not.
func TestMetricsReaderRoleWithMetrics(t *testing.T) {
	for name, tc := range map[string]struct {
		metrics map[string]any
		want    bool
	}{
		"metrics, no ServiceMonitor": {map[string]any{"enabled": true}, true},
		"metrics and ServiceMonitor": {map[string]any{"enabled": true, "serviceMonitor": map[string]any{"enabled": true}}, true},
		"no metrics":                 {map[string]any{"enabled": false}, false},
	} {
		out, err := render(chartPath, namespace, map[string]any{"metrics": tc.metrics})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decode([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(objs, func(u *unstructured.Unstructured) bool {
			return u.GetKind() == "ClusterRole" && u.GetName() == "mooring-metrics-reader"
		})
		if got != tc.want {
			t.Errorf("%s: ClusterRole mooring-metrics-reader rendered %v, want %v", name, got, tc.want)
		}
	}
}

// checkRender holds for every render: no caBundle (the operator or cert-manager injects
// it, and an upgrade must never blank it) and a restricted pod security context.
func checkRender(t *testing.T, out string) {
	t.Helper()
	if strings.Contains(out, "caBundle") {
		t.Error("a template sets caBundle")
	}
	objs, err := decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		// A key with nothing under it ("annotations:") is null, which the API server's
		// schema refuses (or drops, so that a diff never settles).
		for _, path := range nullFields(u.Object, "") {
			t.Errorf("%s %s: %s is null", u.GetKind(), u.GetName(), path)
		}
		if u.GetKind() != "Deployment" {
			continue
		}
		pod, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
		if v, _, _ := unstructured.NestedBool(pod, "securityContext", "runAsNonRoot"); !v {
			t.Error("pod securityContext.runAsNonRoot is not true")
		}
		if v, _, _ := unstructured.NestedString(pod, "securityContext", "seccompProfile", "type"); v != "RuntimeDefault" {
			t.Errorf("seccompProfile %q, want RuntimeDefault", v)
		}
		containers, _, _ := unstructured.NestedSlice(pod, "containers")
		for _, c := range containers {
			sc, _, _ := unstructured.NestedMap(c.(map[string]any), "securityContext")
			drop, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "drop")
			if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false || !reflect.DeepEqual(drop, []string{"ALL"}) {
				t.Errorf("container securityContext %v is not restricted", sc)
			}
		}
	}
}

// docSeparator splits a rendered manifest into documents: "---" alone on its line, never
// the dashes that end a line of text (a CRD description holds "rw-rw----").
var docSeparator = regexp.MustCompile(`(?m)^---\n`)

func withoutCRDs(out string) string {
	var keep []string
	for _, doc := range docSeparator.Split(out, -1) {
		if doc != "" && !strings.Contains(doc, "\nkind: CustomResourceDefinition\n") {
			keep = append(keep, doc)
		}
	}
	return "---\n" + strings.Join(keep, "---\n")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./hack/chart -update writes it)", err)
	}
	if string(want) != got {
		t.Errorf("render %s differs from %s (go test ./hack/chart -update rewrites it; review the diff):\n%s", name, path, got)
	}
}

// With crds.keep false an uninstall deletes every Mooring object in the cluster: the
// install notes say so, and only then.
func TestNotesWarnWhenCRDsGoWithTheRelease(t *testing.T) {
	for keep, warn := range map[bool]bool{true: false, false: true} {
		files, err := renderFiles(chartPath, namespace, map[string]any{"crds": map[string]any{"keep": keep}})
		if err != nil {
			t.Fatal(err)
		}
		notes, ok := files["mooring/templates/NOTES.txt"]
		if !ok {
			t.Fatal("no NOTES.txt rendered")
		}
		if got := strings.Contains(notes, "WARNING: crds.keep is false"); got != warn {
			t.Errorf("crds.keep=%v: warning shown %v, want %v:\n%s", keep, got, warn, notes)
		}
	}
}

// nullFields returns the paths of the null values in v.
func nullFields(v any, path string) []string {
	var out []string
	switch t := v.(type) {
	case nil:
		return []string{path}
	case map[string]any:
		for k, e := range t {
			out = append(out, nullFields(e, path+"."+k)...)
		}
	case []any:
		for i, e := range t {
			out = append(out, nullFields(e, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// renderObjects renders the chart into namespace with vals and decodes it.
func renderObjects(t *testing.T, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	out, err := render(chartPath, namespace, vals)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the rendered object of kind and name, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// Two or more operator replicas are spread over nodes where the scheduler can (the
// webhooks fail closed: a node with every replica takes them all away); one replica, or
// spreadAcrossNodes false, gets no such rule; the user's podAntiAffinity and
// topologySpreadConstraints win over the chart's.
func TestOperatorReplicasSpreadOverNodes(t *testing.T) {
	hostname := map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "mooring"}}
	wantAnti := map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
		"weight": int64(100), "podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname", "labelSelector": hostname}}}}
	wantSpread := []any{map[string]any{"maxSkew": int64(1), "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
		"labelSelector": hostname, "matchLabelKeys": []any{"pod-template-hash"}}}
	nodeAffinity := map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{
		map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/os", "operator": "In", "values": []any{"linux"}}}}}}}
	ownAnti := map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
		"topologyKey": "topology.kubernetes.io/zone", "labelSelector": hostname}}}
	ownSpread := []any{map[string]any{"maxSkew": int64(2), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": hostname}}
	for name, tc := range map[string]struct {
		vals           map[string]any
		affinity       map[string]any
		spread         []any
		hasAffinity    bool
		hasConstraints bool
	}{
		"default, 2 replicas":   {map[string]any{}, map[string]any{"podAntiAffinity": wantAnti}, wantSpread, true, true},
		"3 replicas":            {map[string]any{"replicas": 3}, map[string]any{"podAntiAffinity": wantAnti}, wantSpread, true, true},
		"1 replica":             {map[string]any{"replicas": 1}, nil, nil, false, false},
		"spreadAcrossNodes off": {map[string]any{"spreadAcrossNodes": false}, nil, nil, false, false},
		"node affinity kept": {map[string]any{"affinity": map[string]any{"nodeAffinity": nodeAffinity}},
			map[string]any{"nodeAffinity": nodeAffinity, "podAntiAffinity": wantAnti}, wantSpread, true, true},
		"own rules win": {map[string]any{"affinity": map[string]any{"podAntiAffinity": ownAnti}, "topologySpreadConstraints": ownSpread},
			map[string]any{"podAntiAffinity": ownAnti}, ownSpread, true, true},
		"own rules with one replica": {map[string]any{"replicas": 1, "affinity": map[string]any{"podAntiAffinity": ownAnti}, "topologySpreadConstraints": ownSpread},
			map[string]any{"podAntiAffinity": ownAnti}, ownSpread, true, true},
	} {
		t.Run(name, func(t *testing.T) {
			d := find(renderObjects(t, tc.vals), "Deployment", "mooring-controller-manager")
			if d == nil {
				t.Fatal("no operator Deployment")
			}
			affinity, hasAffinity, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec", "affinity")
			spread, hasConstraints, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "topologySpreadConstraints")
			if hasAffinity != tc.hasAffinity || !sameJSON(affinity, tc.affinity) {
				t.Errorf("affinity %v, want %v", affinity, tc.affinity)
			}
			if hasConstraints != tc.hasConstraints || !sameJSON(spread, tc.spread) {
				t.Errorf("topologySpreadConstraints %v, want %v", spread, tc.spread)
			}
		})
	}
}

// The portal's replicas get a PodDisruptionBudget as the operator's do: one may go at a
// time, and none with a single replica (it would block every drain).
func TestPortalPodDisruptionBudget(t *testing.T) {
	for name, tc := range map[string]struct {
		portal map[string]any
		want   bool
	}{
		"2 replicas": {map[string]any{"enabled": true}, true},
		"3 replicas": {map[string]any{"enabled": true, "replicas": 3}, true},
		"1 replica":  {map[string]any{"enabled": true, "replicas": 1}, false},
		"off":        {map[string]any{"enabled": true, "podDisruptionBudget": map[string]any{"enabled": false}}, false},
		"no portal":  {map[string]any{"enabled": false}, false},
		"release ns": {map[string]any{"enabled": true, "namespace": ""}, true},
	} {
		objs := renderObjects(t, map[string]any{"portal": tc.portal})
		pdb := find(objs, "PodDisruptionBudget", "mooring-portal")
		if (pdb != nil) != tc.want {
			t.Errorf("%s: portal PodDisruptionBudget rendered %v, want %v", name, pdb != nil, tc.want)
			continue
		}
		if pdb == nil {
			continue
		}
		d := find(objs, "Deployment", "mooring-portal")
		sel, _, _ := unstructured.NestedMap(pdb.Object, "spec", "selector")
		want, _, _ := unstructured.NestedMap(d.Object, "spec", "selector")
		if !reflect.DeepEqual(sel, want) || pdb.GetNamespace() != d.GetNamespace() {
			t.Errorf("%s: PodDisruptionBudget %s/%v does not select the portal's pods (%s/%v)", name, pdb.GetNamespace(), sel, d.GetNamespace(), want)
		}
		if v, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); !sameJSON(v, 1) {
			t.Errorf("%s: maxUnavailable %v, want 1", name, v)
		}
	}
}

// metrics.readerSubjects are bound to the ClusterRole mooring-metrics-reader; no binding
// without them.
func TestMetricsReaderSubjects(t *testing.T) {
	if crb := find(renderObjects(t, nil), "ClusterRoleBinding", "mooring-metrics-reader"); crb != nil {
		t.Error("a ClusterRoleBinding mooring-metrics-reader without metrics.readerSubjects")
	}
	subjects := []any{
		map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"},
		map[string]any{"kind": "User", "name": "scraper@example.com"},
	}
	crb := find(renderObjects(t, map[string]any{"metrics": map[string]any{"readerSubjects": subjects}}), "ClusterRoleBinding", "mooring-metrics-reader")
	if crb == nil {
		t.Fatal("no ClusterRoleBinding mooring-metrics-reader")
	}
	ref, _, _ := unstructured.NestedMap(crb.Object, "roleRef")
	if want := map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "mooring-metrics-reader"}; !reflect.DeepEqual(ref, want) {
		t.Errorf("roleRef %v, want %v", ref, want)
	}
	got, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	want := []any{
		map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"},
		map[string]any{"kind": "User", "name": "scraper@example.com", "apiGroup": "rbac.authorization.k8s.io"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("subjects %v, want %v", got, want)
	}
}

// sameJSON reports whether a and b marshal to the same JSON (decoded numbers are
// float64, literals int).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// With crds.keep, what an uninstall leaves is said at install: the conversion webhook of
// the kept CRD, and the portal's users with their bindings.
func TestNotesSayWhatUninstallLeaves(t *testing.T) {
	files, err := renderFiles(chartPath, namespace, map[string]any{"portal": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	notes := files["mooring/templates/NOTES.txt"]
	for _, want := range []string{"conversion webhook then points at the deleted Service", "kubectl delete users.portal.mooring.dev --all",
		"The portal's Secrets (password hashes, token signing keys) stay on uninstall in\nmooring-portal;"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt does not say %q:\n%s", want, notes)
		}
	}
}
