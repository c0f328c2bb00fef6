package cache

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// newCache is a CacheInstance as the API server returns it, defaults filled in, with
// mutate applied.
func newCache(mutate func(*mooringv1.CacheInstance)) *mooringv1.CacheInstance {
	c := &mooringv1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "sessions", Namespace: "team"},
		Spec: mooringv1.CacheInstanceSpec{
			Engine: mooringv1.CacheEngineMemcached, Version: "1.6",
			Replicas: ptr.To[int32](1), MemoryMB: ptr.To[int32](64),
			MaxConnections: ptr.To[int32](1024), Port: ptr.To[int32](11211),
		},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func container(d *appsv1.Deployment) corev1.Container { return d.Spec.Template.Spec.Containers[0] }

func TestChildren(t *testing.T) {
	tests := map[string]struct {
		replicas  int32
		wantKinds []string
	}{
		"one replica: no PodDisruptionBudget": {replicas: 1, wantKinds: []string{"Deployment", "Service", "ConfigMap"}},
		"two replicas":                        {replicas: 2, wantKinds: []string{"Deployment", "Service", "ConfigMap", "PodDisruptionBudget"}},
		"most replicas":                       {replicas: 64, wantKinds: []string{"Deployment", "Service", "ConfigMap", "PodDisruptionBudget"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, c := range Children(newCache(func(c *mooringv1.CacheInstance) { c.Spec.Replicas = ptr.To(tt.replicas) })) {
				switch c.(type) {
				case *appsv1.Deployment:
					got = append(got, "Deployment")
				case *corev1.Service:
					got = append(got, "Service")
				case *policyv1.PodDisruptionBudget:
					got = append(got, "PodDisruptionBudget")
				case *corev1.ConfigMap:
					got = append(got, "ConfigMap")
				default:
					got = append(got, "unexpected")
				}
				wantName := "sessions"
				if _, ok := c.(*corev1.ConfigMap); ok {
					wantName = "sessions-binding"
				}
				if c.GetName() != wantName {
					t.Errorf("%T is named %q, want %s", c, c.GetName(), wantName)
				}
				if l := c.GetLabels(); l[mooringv1.ComponentLabel] != Component || l[mooringv1.InstanceLabel] != "sessions" || l[mooringv1.ManagedByLabel] != mooringv1.ManagedBy {
					t.Errorf("%T labels = %v, want component cache, instance sessions, managed-by mooring", c, l)
				}
			}
			if !slices.Equal(got, tt.wantKinds) {
				t.Fatalf("children = %v, want %v", got, tt.wantKinds)
			}
		})
	}
}

func TestImage(t *testing.T) {
	tests := map[string]struct {
		mutate func(*mooringv1.CacheInstance)
		want   string
	}{
		"default version":       {want: "memcached:1.6"},
		"version picks the tag": {mutate: func(c *mooringv1.CacheInstance) { c.Spec.Version = "1.6.38-alpine" }, want: "memcached:1.6.38-alpine"},
		"unset version":         {mutate: func(c *mooringv1.CacheInstance) { c.Spec.Version = "" }, want: "memcached:1.6"},
		"image overrides version": {mutate: func(c *mooringv1.CacheInstance) {
			c.Spec.Image = "mirror.example.com/memcached@sha256:abc"
			c.Spec.Version = "1.5"
		}, want: "mirror.example.com/memcached@sha256:abc"},
		"image without any version": {mutate: func(c *mooringv1.CacheInstance) { c.Spec.Image = "mc:latest"; c.Spec.Version = "" }, want: "mc:latest"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			d := Deployment(newCache(tt.mutate))
			if got := container(d).Image; got != tt.want {
				t.Errorf("image = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	tests := map[string]struct {
		mutate func(*mooringv1.CacheInstance)
		want   []string
	}{
		"defaults": {want: []string{"-m", "64", "-c", "1024", "-p", "11211"}},
		"all set": {
			mutate: func(c *mooringv1.CacheInstance) {
				c.Spec.MemoryMB, c.Spec.MaxConnections, c.Spec.Port = ptr.To[int32](2048), ptr.To[int32](4096), ptr.To[int32](12000)
			},
			want: []string{"-m", "2048", "-c", "4096", "-p", "12000"},
		},
		"unset fields take the API defaults": {
			mutate: func(c *mooringv1.CacheInstance) { c.Spec = mooringv1.CacheInstanceSpec{} },
			want:   []string{"-m", "64", "-c", "1024", "-p", "11211"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := container(Deployment(newCache(tt.mutate)))
			if !slices.Equal(c.Args, tt.want) {
				t.Errorf("args = %q, want %q", c.Args, tt.want)
			}
			if len(c.Command) != 0 {
				t.Errorf("command = %q, want the image's entrypoint", c.Command)
			}
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	tests := map[string]struct {
		memoryMB, connections int32
		want                  string
	}{
		// 64 + the 32 MiB floor + 1024 connections × 16 KiB (16 MiB).
		"defaults: floor applies": {memoryMB: 64, connections: 1024, want: "112Mi"},
		// 10% of 320 is exactly the floor.
		"floor and 10% meet": {memoryMB: 320, connections: 1024, want: "368Mi"},
		// 10% of 1000 = 100 > 32; one connection still rounds up to a whole MiB.
		"10% above the floor": {memoryMB: 1000, connections: 1, want: "1101Mi"},
		// ceil(102.4) = 103.
		"10% rounds up": {memoryMB: 1024, connections: 1024, want: "1143Mi"},
		// Connections count too: 65536 × 16 KiB = 1 GiB.
		"many connections": {memoryMB: 64, connections: 65536, want: "1120Mi"},
		"largest":          {memoryMB: 65536, connections: 65536, want: "73114Mi"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := container(Deployment(newCache(func(c *mooringv1.CacheInstance) {
				c.Spec.MemoryMB, c.Spec.MaxConnections = ptr.To(tt.memoryMB), ptr.To(tt.connections)
			})))
			limit, request := c.Resources.Limits[corev1.ResourceMemory], c.Resources.Requests[corev1.ResourceMemory]
			if limit.String() != tt.want {
				t.Errorf("memory limit = %s, want %s", limit.String(), tt.want)
			}
			if !request.Equal(limit) {
				t.Errorf("memory request %s != limit %s", request.String(), limit.String())
			}
			if len(c.Resources.Limits) != 1 || len(c.Resources.Requests) != 1 {
				t.Errorf("resources = %+v, want memory only", c.Resources)
			}
		})
	}
}

func TestDeployment(t *testing.T) {
	tests := map[string]struct {
		cache *mooringv1.CacheInstance
		check func(t *testing.T, d *appsv1.Deployment)
	}{
		"replicas and container": {
			cache: newCache(func(c *mooringv1.CacheInstance) { c.Spec.Replicas = ptr.To[int32](3) }),
			check: func(t *testing.T, d *appsv1.Deployment) {
				if *d.Spec.Replicas != 3 {
					t.Errorf("replicas = %d, want 3", *d.Spec.Replicas)
				}
				if cs := d.Spec.Template.Spec.Containers; len(cs) != 1 || cs[0].Name != ContainerName {
					t.Errorf("containers = %+v, want one named memcached", cs)
				}
			},
		},
		"selector matches pod labels and is scoped to caches": {
			cache: newCache(nil),
			check: func(t *testing.T, d *appsv1.Deployment) {
				for k, v := range d.Spec.Selector.MatchLabels {
					if d.Spec.Template.Labels[k] != v {
						t.Errorf("selector %s=%s not on pod template labels %v", k, v, d.Spec.Template.Labels)
					}
				}
				if d.Spec.Selector.MatchLabels[mooringv1.ComponentLabel] != Component {
					t.Errorf("selector %v lacks component=cache", d.Spec.Selector.MatchLabels)
				}
			},
		},
		"port and TCP probes on it": {
			cache: newCache(func(c *mooringv1.CacheInstance) { c.Spec.Port = ptr.To[int32](12345) }),
			check: func(t *testing.T, d *appsv1.Deployment) {
				c := container(d)
				if len(c.Ports) != 1 || c.Ports[0].Name != PortName || c.Ports[0].ContainerPort != 12345 || c.Ports[0].Protocol != corev1.ProtocolTCP {
					t.Fatalf("ports = %+v, want memcache 12345/TCP", c.Ports)
				}
				for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
					if p == nil || p.TCPSocket == nil || p.TCPSocket.Port.StrVal != c.Ports[0].Name {
						t.Errorf("%s probe = %+v, want a TCP probe on port %s", name, p, c.Ports[0].Name)
					}
				}
			},
		},
		"restricted security context": {
			cache: newCache(nil),
			check: func(t *testing.T, d *appsv1.Deployment) {
				pod := d.Spec.Template.Spec
				psc := pod.SecurityContext
				if psc == nil || !ptr.Deref(psc.RunAsNonRoot, false) || ptr.Deref(psc.RunAsUser, 0) != 11211 || ptr.Deref(psc.RunAsGroup, 0) != 11211 ||
					psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("pod security context = %+v, want runAsNonRoot, user and group 11211, RuntimeDefault seccomp", psc)
				}
				sc := pod.Containers[0].SecurityContext
				if sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || ptr.Deref(sc.Privileged, true) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) ||
					sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
					t.Errorf("container security context = %+v, want no escalation, not privileged, read-only root, drop ALL", sc)
				}
				if ptr.Deref(pod.AutomountServiceAccountToken, true) {
					t.Error("service account token is mounted")
				}
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) { tt.check(t, Deployment(tt.cache)) })
	}
}

func TestService(t *testing.T) {
	svc := Service(newCache(func(c *mooringv1.CacheInstance) { c.Spec.Port = ptr.To[int32](11311) }))
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("type %s clusterIP %q, want a headless ClusterIP Service (clusterIP None)", svc.Spec.Type, svc.Spec.ClusterIP)
	}
	if p := svc.Spec.Ports; len(p) != 1 || p[0].Port != 11311 || p[0].TargetPort.StrVal != PortName || p[0].Name != PortName {
		t.Errorf("ports = %+v, want memcache 11311 -> memcache", p)
	}
	d := Deployment(newCache(nil))
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %v does not select the pods (labels %v)", svc.Spec.Selector, d.Spec.Template.Labels)
		}
	}
}

// The availability defaults come together: with more than one replica, the pods prefer
// one per node (selecting the cache's own pods) and a budget lets drains take one at a time.
func TestPodDisruptionBudgetAndSpread(t *testing.T) {
	tests := map[string]struct {
		replicas *int32
		want     bool
	}{
		"unset replicas (1)": {replicas: nil, want: false},
		"one replica":        {replicas: ptr.To[int32](1), want: false},
		"two replicas":       {replicas: ptr.To[int32](2), want: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCache(func(c *mooringv1.CacheInstance) { c.Spec.Replicas = tt.replicas })
			spread := Deployment(c).Spec.Template.Spec.TopologySpreadConstraints
			if (len(spread) > 0) != tt.want {
				t.Errorf("topology spread %+v, want one: %v", spread, tt.want)
			}
			for _, tsc := range spread {
				if tsc.TopologyKey != corev1.LabelHostname || tsc.WhenUnsatisfiable != corev1.ScheduleAnyway ||
					!maps.Equal(tsc.LabelSelector.MatchLabels, Deployment(c).Spec.Selector.MatchLabels) {
					t.Errorf("topology spread %+v, want a soft one on the hostname over the Deployment's selector", tsc)
				}
			}
			pdb := PodDisruptionBudget(c)
			if (pdb != nil) != tt.want {
				t.Fatalf("PodDisruptionBudget = %v, want one: %v", pdb, tt.want)
			}
			if pdb == nil {
				return
			}
			if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntVal != 1 || pdb.Spec.MinAvailable != nil {
				t.Errorf("spec = %+v, want maxUnavailable 1 only", pdb.Spec)
			}
			labels := Deployment(c).Spec.Template.Labels
			for k, v := range pdb.Spec.Selector.MatchLabels {
				if labels[k] != v {
					t.Errorf("selector %v does not select the pods (labels %v)", pdb.Spec.Selector.MatchLabels, labels)
				}
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	if got := Endpoint(newCache(nil)); got != "sessions.team.svc:11211" {
		t.Errorf("endpoint = %q, want sessions.team.svc:11211", got)
	}
	if got := Endpoint(newCache(func(c *mooringv1.CacheInstance) { c.Spec.Port = ptr.To[int32](2000) })); got != "sessions.team.svc:2000" {
		t.Errorf("endpoint = %q, want sessions.team.svc:2000", got)
	}
}

// The binding ConfigMap carries the servicebinding.io entries of a memcached service and
// nothing secret (memcached has no credentials).
func TestBindingConfigMap(t *testing.T) {
	c := newCache(func(c *mooringv1.CacheInstance) { c.Spec.Port = ptr.To[int32](11311) })
	cm := BindingConfigMap(c)
	want := map[string]string{"type": "memcached", "provider": "mooring", "host": "sessions." + c.Namespace + ".svc", "port": "11311"}
	if !maps.Equal(cm.Data, want) {
		t.Errorf("binding data = %v, want %v", cm.Data, want)
	}
}
