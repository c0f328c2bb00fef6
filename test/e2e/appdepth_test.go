package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mooringhq/mooring/internal/testutil"
)

// installGatewayAPI installs the HTTPRoute CRD of the sigs.k8s.io/gateway-api module
// go.mod pins (from the module cache) into the running cluster, after the operator
// started: Mooring must find it without a restart.
func installGatewayAPI(t *testing.T) {
	t.Helper()
	suite.MustRun(t, "apply", "--server-side", "-f", testutil.GatewayAPICRD(t, "httproutes"))
	// kubectl wait fails outright on a CRD that has no conditions yet: poll instead.
	suite.WaitField(t, rollout, "default", "crd/httproutes.gateway.networking.k8s.io", `.status.conditions[?(@.type=="Established")].status`, "True")
}

const exposedApp = `apiVersion: mooring.dev/v1
kind: App
metadata:
  name: front
spec:
  image: nginx:1.27
  port: 8080
  expose:
    host: front.example.com
    tls:
      issuer: letsencrypt
`

// spec.expose makes an Ingress, or with a gateway an HTTPRoute (the Gateway API installed
// from the Go module while the operator runs), and removing it prunes what it made.
func TestAppExposeIngressAndHTTPRoute(t *testing.T) {
	ns := suite.Namespace(t, "expose")
	suite.Apply(t, ns, exposedApp)
	suite.WaitField(t, rollout, ns, "ingress/front", ".spec.rules[0].host", "front.example.com")
	suite.WaitField(t, rollout, ns, "ingress/front", ".spec.rules[0].http.paths[0].backend.service.name", "front")
	suite.WaitField(t, rollout, ns, "ingress/front", ".spec.tls[0].secretName", "front-tls")
	suite.WaitField(t, rollout, ns, "ingress/front", `.metadata.annotations.cert-manager\.io/cluster-issuer`, "letsencrypt")
	suite.WaitField(t, rollout, ns, "app/front", ".status.url", "https://front.example.com/")

	installGatewayAPI(t)
	suite.MustRun(t, "patch", "-n", ns, "app/front", "--type=json", "-p",
		`[{"op":"remove","path":"/spec/expose/tls"},{"op":"add","path":"/spec/expose/gateway","value":{"name":"public","sectionName":"http"}}]`)
	// The App looks for the Gateway API again within a minute by itself; here it was
	// installed before the change, so the change's reconcile finds it at once.
	suite.WaitField(t, rollout, ns, "httproute/front", ".spec.parentRefs[0].name", "public")
	suite.WaitField(t, rollout, ns, "httproute/front", ".spec.rules[0].backendRefs[0].port", "8080")
	suite.WaitField(t, rollout, ns, "app/front", `.status.conditions[?(@.type=="Exposed")].reason`, "HTTPRouteApplied")
	testutil.WaitGoneWithin(t, rollout, suite.Client, types.NamespacedName{Namespace: ns, Name: "front"}, &networkingv1.Ingress{}, "Ingress front pruned")

	suite.MustRun(t, "patch", "-n", ns, "app/front", "--type=json", "-p", `[{"op":"remove","path":"/spec/expose"}]`)
	testutil.WaitGoneWithin(t, rollout, suite.Client, types.NamespacedName{Namespace: ns, Name: "front"}, &gatewayv1.HTTPRoute{}, "HTTPRoute front pruned")
	suite.WaitField(t, rollout, ns, "app/front", ".status.url", "")
	suite.WaitField(t, rollout, ns, "deployment/front", ".status.availableReplicas", "1")
}

const autoscaledApp = `apiVersion: mooring.dev/v1
kind: App
metadata:
  name: elastic
spec:
  image: nginx:1.27
  replicas: 1
  resources:
    requests:
      cpu: 50m
  autoscaling:
    minReplicas: 2
    maxReplicas: 4
`

// The cluster's real HPA controller owns the replica count: it raises the Deployment to
// minReplicas, Mooring leaves it there through later changes, and kubectl scale app is
// refused with a message.
func TestAppAutoscalingLeavesReplicasToTheHPA(t *testing.T) {
	ns := suite.Namespace(t, "autoscaling")
	suite.Apply(t, ns, autoscaledApp)
	suite.WaitField(t, rollout, ns, "hpa/elastic", ".spec.scaleTargetRef.name", "elastic")
	// spec.replicas is 1; only the autoscaler makes it 2.
	suite.WaitField(t, rollout, ns, "deployment/elastic", ".spec.replicas", "2")
	suite.WaitField(t, rollout, ns, "app/elastic", ".status.availableReplicas", "2")
	suite.WaitField(t, rollout, ns, "app/elastic", ".status.phase", "Running")
	suite.WaitField(t, rollout, ns, "pdb/elastic", ".spec.maxUnavailable", "1")
	// kubectl get shows the autoscaler's count (status.desiredReplicas), not the
	// spec.replicas it overrides.
	suite.WaitField(t, rollout, ns, "app/elastic", ".status.desiredReplicas", "2")
	row := strings.Fields(suite.MustRun(t, "get", "-n", ns, "app/elastic", "--no-headers"))
	if len(row) < 4 || row[2] != "2" || row[3] != "2" {
		t.Errorf("kubectl get app/elastic row = %v, want REPLICAS 2 (the autoscaler's count, spec.replicas is 1) and AVAILABLE 2", row)
	}

	out, err := suite.Run("scale", "-n", ns, "app/elastic", "--replicas=3")
	if err == nil || !strings.Contains(err.Error(), "spec.replicas cannot change while spec.autoscaling is set") {
		t.Fatalf("kubectl scale of an autoscaled App: %v %s, want a refusal naming spec.replicas", err, out)
	}

	// A change Mooring applies to the Deployment keeps the autoscaler's count.
	suite.MustRun(t, "patch", "-n", ns, "app/elastic", "--type=merge", "-p", `{"spec":{"image":"nginx:1.28"}}`)
	suite.WaitField(t, rollout, ns, "deployment/elastic", ".spec.template.spec.containers[0].image", "nginx:1.28")
	suite.WaitField(t, rollout, ns, "app/elastic", ".status.phase", "Running")
	if got, _ := suite.JSONPath(ns, "deployment/elastic", ".spec.replicas"); got != "2" {
		t.Fatalf("Deployment replicas after an image change = %q, want the autoscaler's 2", got)
	}
}

const spreadApp = `apiVersion: mooring.dev/v1
kind: App
metadata:
  name: spread
spec:
  image: nginx:1.27
  replicas: 3
  highAvailability: true
`

// Three replicas of a highly available App run on the three kwok nodes, one each.
func TestAppPodsSpreadOverNodes(t *testing.T) {
	ns := suite.Namespace(t, "spread")
	suite.Apply(t, ns, spreadApp)
	suite.WaitField(t, rollout, ns, "app/spread", ".status.phase", "Running")
	nodes := strings.Fields(suite.MustRun(t, "get", "pods", "-n", ns, "-l", "app.kubernetes.io/instance=spread",
		"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].spec.nodeName}"))
	slices.Sort(nodes)
	if len(nodes) != 3 || len(slices.Compact(slices.Clone(nodes))) != 3 {
		t.Fatalf("pods on nodes %v, want 3 pods on 3 different nodes", nodes)
	}
	// The scheduler's own default spreading might have done that too: the pods carry
	// Mooring's constraint, and the Deployment never drops below 3 while rolling.
	suite.WaitField(t, rollout, ns, "deployment/spread", ".spec.template.spec.topologySpreadConstraints[0].topologyKey", "kubernetes.io/hostname")
	suite.WaitField(t, rollout, ns, "deployment/spread", ".spec.template.spec.topologySpreadConstraints[0].whenUnsatisfiable", "ScheduleAnyway")
	suite.WaitField(t, rollout, ns, "deployment/spread", ".spec.strategy.rollingUpdate.maxUnavailable", "0")
	suite.WaitField(t, rollout, ns, "pdb/spread", ".status.expectedPods", "3")
}

const boundApp = `apiVersion: mooring.dev/v1
kind: App
metadata:
  name: checkout
spec:
  image: nginx:1.27
  bindings:
  - name: orders
    ref: {kind: DatabaseCluster, name: orders}
    env: true
  - name: sessions
    ref: {kind: CacheInstance, name: sessions}
`

type podSpec struct {
	Volumes []struct {
		Name      string `json:"name"`
		Projected struct {
			Sources []struct {
				ConfigMap *struct {
					Name string `json:"name"`
				} `json:"configMap"`
				Secret *struct {
					Name  string `json:"name"`
					Items []struct {
						Key  string `json:"key"`
						Path string `json:"path"`
					} `json:"items"`
				} `json:"secret"`
			} `json:"sources"`
		} `json:"projected"`
	} `json:"volumes"`
	Containers []struct {
		Env []struct {
			Name      string `json:"name"`
			Value     string `json:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name string `json:"name"`
					Key  string `json:"key"`
				} `json:"secretKeyRef"`
			} `json:"valueFrom"`
		} `json:"env"`
		VolumeMounts []struct {
			Name      string `json:"name"`
			MountPath string `json:"mountPath"`
		} `json:"volumeMounts"`
	} `json:"containers"`
}

// An App bound to the sample DatabaseCluster and CacheInstance waits while they are
// missing, then runs with the binding volumes; the projected files are exactly the keys of
// the binding ConfigMaps and the credentials Secret, and a new password rolls the pods.
func TestAppBindsToSampleDatabaseAndCache(t *testing.T) {
	ns := suite.Namespace(t, "bindings")
	suite.Apply(t, ns, boundApp)
	suite.WaitField(t, rollout, ns, "app/checkout", `.status.conditions[?(@.type=="BindingsReady")].reason`, "BindingNotFound")
	if out, _ := suite.Run("get", "-n", ns, "deployment/checkout", "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Fatalf("Deployment made while the bindings wait: %s", out)
	}

	applySample(t, ns, "mooring_v1beta1_databasecluster.yaml")
	applySample(t, ns, "mooring_v1_cacheinstance.yaml")
	suite.WaitField(t, rollout, ns, "databasecluster/orders", ".status.binding.name", "orders-binding")
	suite.WaitField(t, rollout, ns, "cacheinstance/sessions", ".status.binding.name", "sessions-binding")
	suite.WaitField(t, rollout, ns, "app/checkout", `.status.conditions[?(@.type=="BindingsReady")].status`, "True")
	suite.WaitField(t, rollout, ns, "app/checkout", ".status.phase", "Running")

	// Read the pod spec back from a running pod.
	raw := suite.MustRun(t, "get", "pods", "-n", ns, "-l", "app.kubernetes.io/instance=checkout", "-o", "jsonpath={.items[0].spec}")
	var spec podSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatalf("pod spec: %v\n%s", err, raw)
	}
	files := map[string][]string{} // volume -> files it projects
	for _, v := range spec.Volumes {
		for _, src := range v.Projected.Sources {
			switch {
			case src.ConfigMap != nil:
				data := suite.MustRun(t, "get", "configmap", src.ConfigMap.Name, "-n", ns, "-o", "jsonpath={.data}")
				var m map[string]string
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatal(err)
				}
				for k := range m {
					files[v.Name] = append(files[v.Name], k)
				}
			case src.Secret != nil:
				keys := suite.MustRun(t, "get", "secret", src.Secret.Name, "-n", ns, "-o", `jsonpath={.data}`)
				for _, item := range src.Secret.Items {
					if !strings.Contains(keys, `"`+item.Key+`"`) {
						t.Errorf("Secret %s has no key %s", src.Secret.Name, item.Key)
					}
					files[v.Name] = append(files[v.Name], item.Path)
				}
			}
		}
		slices.Sort(files[v.Name])
	}
	want := map[string][]string{
		"binding-orders":   {"ca.crt", "database", "host", "password", "port", "provider", "sslmode", "type", "username"},
		"binding-sessions": {"host", "port", "provider", "type"},
	}
	for vol, w := range want {
		if !slices.Equal(files[vol], w) {
			t.Errorf("volume %s projects %v, want %v", vol, files[vol], w)
		}
	}
	mounts := map[string]string{}
	for _, m := range spec.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["binding-orders"] != "/bindings/orders" || mounts["binding-sessions"] != "/bindings/sessions" {
		t.Errorf("mounts = %v", mounts)
	}
	if got, _ := suite.JSONPath(ns, "configmap/orders-binding", ".data.host"); got != "orders."+ns+".svc" {
		t.Errorf("orders binding host = %q", got)
	}
	passwordRef := false
	for _, e := range spec.Containers[0].Env {
		if e.Name == "ORDERS_PASSWORD" {
			passwordRef = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "orders-credentials"
		}
	}
	if !passwordRef {
		t.Errorf("ORDERS_PASSWORD is not a reference to the credentials Secret: %+v", spec.Containers[0].Env)
	}

	// Rotate the password: a new ReplicaSet rolls out.
	before := strings.Fields(suite.MustRun(t, "get", "rs", "-n", ns, "-l", "app.kubernetes.io/instance=checkout", "-o", "jsonpath={.items[*].metadata.name}"))
	suite.MustRun(t, "patch", "-n", ns, "secret/orders-credentials", "--type=merge", "-p", `{"stringData":{"password":"rotated-in-e2e"}}`)
	testutil.Eventually(t, rollout, "a new ReplicaSet after the password rotation", func() error {
		out, err := suite.Run("get", "rs", "-n", ns, "-l", "app.kubernetes.io/instance=checkout", "-o", "jsonpath={.items[*].metadata.name}")
		if err != nil {
			return err
		}
		now := strings.Fields(out)
		for _, rs := range now {
			if !slices.Contains(before, rs) {
				return nil
			}
		}
		return fmt.Errorf("replica sets still %v", now)
	})
	suite.WaitField(t, rollout, ns, "app/checkout", ".status.phase", "Running")
	if status := suite.MustRun(t, "get", "-n", ns, "app/checkout", "-o", "json"); strings.Contains(status, "rotated-in-e2e") {
		t.Fatal("the password reached the App")
	}
}
