package app

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

func kinds(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		switch o.(type) {
		case *appsv1.Deployment:
			out = append(out, "Deployment")
		case *corev1.Service:
			out = append(out, "Service")
		case *corev1.ConfigMap:
			out = append(out, "ConfigMap")
		case *policyv1.PodDisruptionBudget:
			out = append(out, "PodDisruptionBudget")
		case *autoscalingv2.HorizontalPodAutoscaler:
			out = append(out, "HorizontalPodAutoscaler")
		case *networkingv1.Ingress:
			out = append(out, "Ingress")
		case *gatewayv1.HTTPRoute:
			out = append(out, "HTTPRoute")
		default:
			out = append(out, "unexpected")
		}
	}
	return out
}

var (
	withPort    = func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](8080) }
	withIngress = func(a *mooringv1.App) {
		withPort(a)
		a.Spec.Expose = &mooringv1.AppExpose{Host: "shop.example.com", Path: "/"}
	}
	withGateway = func(a *mooringv1.App) {
		withPort(a)
		a.Spec.Expose = &mooringv1.AppExpose{Host: "shop.example.com", Path: "/api", Gateway: &mooringv1.AppGatewayRef{Name: "edge", Namespace: "infra", SectionName: "https"}}
	}
	withAutoscaling = func(a *mooringv1.App) {
		a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MinReplicas: ptr.To[int32](2), MaxReplicas: 6}
	}
)

func all(mutations ...func(*mooringv1.App)) func(*mooringv1.App) {
	return func(a *mooringv1.App) {
		for _, m := range mutations {
			m(a)
		}
	}
}

// Which children each field and combination makes.
func TestChildrenOfOptionalFields(t *testing.T) {
	tests := map[string]struct {
		mutate func(*mooringv1.App)
		r      Resolved
		want   []string
	}{
		"ingress":                      {mutate: withIngress, want: []string{"Deployment", "Service", "Ingress"}},
		"gateway, API served":          {mutate: withGateway, r: Resolved{GatewayAPI: true}, want: []string{"Deployment", "Service", "HTTPRoute"}},
		"gateway, API not served":      {mutate: withGateway, want: []string{"Deployment", "Service"}},
		"autoscaling":                  {mutate: withAutoscaling, want: []string{"Deployment", "PodDisruptionBudget", "HorizontalPodAutoscaler"}},
		"autoscaling, HA off":          {mutate: all(withAutoscaling, func(a *mooringv1.App) { a.Spec.HighAvailability = ptr.To(false) }), want: []string{"Deployment", "HorizontalPodAutoscaler"}},
		"HA on, 2 replicas":            {mutate: func(a *mooringv1.App) { a.Spec.HighAvailability = ptr.To(true) }, want: []string{"Deployment", "PodDisruptionBudget"}},
		"HA on, 1 replica":             {mutate: func(a *mooringv1.App) { a.Spec.HighAvailability = ptr.To(true); a.Spec.Replicas = ptr.To[int32](1) }, want: []string{"Deployment"}},
		"2 replicas, HA unset":         {mutate: nil, want: []string{"Deployment"}},
		"config, ingress, autoscaling": {mutate: all(func(a *mooringv1.App) { a.Spec.Config = "x" }, withIngress, withAutoscaling), want: []string{"ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "Ingress"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := kinds(Children(newApp(tt.mutate), tt.r)); !slices.Equal(got, tt.want) {
				t.Errorf("children = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeploymentOptionalFields(t *testing.T) {
	tests := map[string]struct {
		mutate func(*mooringv1.App)
		r      Resolved
		check  func(t *testing.T, d *appsv1.Deployment)
	}{
		"command, args, envFrom": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Command = []string{"/server"}
				a.Spec.Args = []string{"--port=8080"}
				a.Spec.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "api-keys"}}}}
			},
			check: func(t *testing.T, d *appsv1.Deployment) {
				c := container(d)
				if !slices.Equal(c.Command, []string{"/server"}) || !slices.Equal(c.Args, []string{"--port=8080"}) || len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != "api-keys" {
					t.Errorf("command %v args %v envFrom %+v", c.Command, c.Args, c.EnvFrom)
				}
			},
		},
		"security context keeps RuntimeDefault seccomp": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
			},
			check: func(t *testing.T, d *appsv1.Deployment) {
				sc := d.Spec.Template.Spec.SecurityContext
				if *sc.RunAsUser != 1000 || *sc.FSGroup != 2000 || !*sc.RunAsNonRoot || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("pod security context = %+v", sc)
				}
			},
		},
		"the App's runAsNonRoot and seccomp profile win over the defaults": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/app.json")}}
			},
			check: func(t *testing.T, d *appsv1.Deployment) {
				pod, c := d.Spec.Template.Spec.SecurityContext, container(d).SecurityContext
				if *pod.RunAsNonRoot || pod.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost {
					t.Errorf("pod security context = %+v, want the App's runAsNonRoot false and Localhost profile", pod)
				}
				if c.RunAsNonRoot != nil || c.SeccompProfile != nil {
					t.Errorf("container security context = %+v overrides the App's pod security context", c)
				}
				if c.Capabilities != nil {
					t.Errorf("container capabilities = %+v, want the runtime's defaults for an App that runs as root", c.Capabilities)
				}
			},
		},
		"runAsNonRoot true with a seccomp profile still drops every capability": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/app.json")}}
			},
			check: func(t *testing.T, d *appsv1.Deployment) {
				if c := container(d).SecurityContext; c.Capabilities == nil || !slices.Equal(c.Capabilities.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("container capabilities = %+v, want drop [ALL]", c.Capabilities)
				}
			},
		},
		"runAsUser 0 gets no runAsNonRoot default": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}
			},
			check: func(t *testing.T, d *appsv1.Deployment) {
				if sc := d.Spec.Template.Spec.SecurityContext; sc.RunAsNonRoot != nil {
					t.Errorf("pod security context = %+v: runAsNonRoot contradicts the App's runAsUser 0", sc)
				}
				if c := container(d).SecurityContext; c.Capabilities != nil {
					t.Errorf("container capabilities = %+v, want the runtime's defaults for an App that runs as root", c.Capabilities)
				}
			},
		},
		"health check replaces the TCP probe": {
			mutate: func(a *mooringv1.App) {
				withPort(a)
				a.Spec.HealthCheck = &mooringv1.AppHealthCheck{Path: "/healthz", InitialDelaySeconds: ptr.To[int32](5), PeriodSeconds: ptr.To[int32](15), FailureThreshold: ptr.To[int32](4)}
			},
			check: func(t *testing.T, d *appsv1.Deployment) {
				c := container(d)
				for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
					if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.StrVal != portName || p.TCPSocket != nil || p.PeriodSeconds != 15 {
						t.Errorf("%s probe = %+v, want HTTP GET /healthz on the http port every 15s", name, p)
					}
				}
				if c.ReadinessProbe.FailureThreshold != 4 || c.LivenessProbe.FailureThreshold != 4 {
					t.Errorf("failure thresholds %d/%d, want 4", c.ReadinessProbe.FailureThreshold, c.LivenessProbe.FailureThreshold)
				}
				if c.StartupProbe.InitialDelaySeconds != 5 || c.StartupProbe.FailureThreshold*c.StartupProbe.PeriodSeconds < startupAllowanceSeconds {
					t.Errorf("startup probe %+v, want delay 5 and %ds to start", c.StartupProbe, startupAllowanceSeconds)
				}
			},
		},
		"health check on another port": {
			mutate: func(a *mooringv1.App) {
				withPort(a)
				a.Spec.HealthCheck = &mooringv1.AppHealthCheck{Path: "/", Port: ptr.To[int32](9090)}
			},
			check: func(t *testing.T, d *appsv1.Deployment) {
				if p := container(d).LivenessProbe.HTTPGet.Port; p.IntVal != 9090 {
					t.Errorf("probe port = %v, want 9090", p)
				}
			},
		},
		"autoscaling leaves replicas out and is highly available": {
			mutate: withAutoscaling,
			check: func(t *testing.T, d *appsv1.Deployment) {
				if d.Spec.Replicas != nil {
					t.Errorf("replicas = %d, want unset for the autoscaler", *d.Spec.Replicas)
				}
				checkHA(t, d)
			},
		},
		"HA with fixed replicas": {
			mutate: func(a *mooringv1.App) { a.Spec.HighAvailability = ptr.To(true); a.Spec.Replicas = ptr.To[int32](3) },
			check: func(t *testing.T, d *appsv1.Deployment) {
				if *d.Spec.Replicas != 3 {
					t.Errorf("replicas = %v", d.Spec.Replicas)
				}
				checkHA(t, d)
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) { tt.check(t, Deployment(newApp(tt.mutate), tt.r)) })
	}
}

// bindingFixtures are a database binding with env and a cache binding without, resolved.
func bindingFixtures() (db, cache ResolvedBinding, withBindings func(*mooringv1.App)) {
	db = ResolvedBinding{
		AppBinding: mooringv1.AppBinding{Name: "orders-db", Ref: mooringv1.AppBindingRef{Kind: "DatabaseCluster", Name: "orders"}, Env: true},
		ConfigMap:  "orders-binding", Secret: "orders-credentials", Keys: []string{"database", "host", "port", "provider", "type"}, Version: "h1/42",
	}
	cache = ResolvedBinding{
		AppBinding: mooringv1.AppBinding{Name: "sessions", Ref: mooringv1.AppBindingRef{Kind: "CacheInstance", Name: "sessions"}},
		ConfigMap:  "sessions-binding", Keys: []string{"host", "port", "provider", "type"}, Version: "h2",
	}
	withBindings = func(a *mooringv1.App) { a.Spec.Bindings = []mooringv1.AppBinding{db.AppBinding, cache.AppBinding} }
	return db, cache, withBindings
}

// Bindings become projected volumes, read-only mounts and variables by reference.
func TestDeploymentBindings(t *testing.T) {
	dbBinding, cacheBinding, withBindings := bindingFixtures()
	d := Deployment(newApp(withBindings), Resolved{Bindings: []ResolvedBinding{dbBinding, cacheBinding}})

	spec := d.Spec.Template.Spec
	if len(spec.Volumes) != 2 {
		t.Fatalf("volumes = %+v, want one per binding", spec.Volumes)
	}
	db := spec.Volumes[0].Projected.Sources
	if spec.Volumes[0].Name != "binding-orders-db" || len(db) != 2 || db[0].ConfigMap.Name != "orders-binding" || db[1].Secret.Name != "orders-credentials" ||
		len(db[1].Secret.Items) != 2 || db[1].Secret.Items[1].Key != "password" {
		t.Errorf("database binding volume = %+v", spec.Volumes[0])
	}
	if cache := spec.Volumes[1].Projected.Sources; len(cache) != 1 || cache[0].ConfigMap.Name != "sessions-binding" {
		t.Errorf("cache binding volume = %+v, want its ConfigMap only", spec.Volumes[1])
	}
	mounts := container(d).VolumeMounts
	if len(mounts) != 2 || mounts[0].MountPath != "/bindings/orders-db" || !mounts[0].ReadOnly || mounts[1].MountPath != "/bindings/sessions" {
		t.Errorf("mounts = %+v", mounts)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range container(d).Env {
		env[e.Name] = e
	}
	if env["SERVICE_BINDING_ROOT"].Value != "/bindings" {
		t.Errorf("SERVICE_BINDING_ROOT = %+v", env["SERVICE_BINDING_ROOT"])
	}
	if e := env["ORDERS_DB_HOST"]; e.Value != "" || e.ValueFrom.ConfigMapKeyRef.Name != "orders-binding" || e.ValueFrom.ConfigMapKeyRef.Key != "host" {
		t.Errorf("ORDERS_DB_HOST = %+v, want a reference to orders-binding/host", e)
	}
	if e := env["ORDERS_DB_PASSWORD"]; e.Value != "" || e.ValueFrom.SecretKeyRef.Name != "orders-credentials" || e.ValueFrom.SecretKeyRef.Key != "password" {
		t.Errorf("ORDERS_DB_PASSWORD = %+v, want a reference to the credentials Secret", e)
	}
	if _, ok := env["SESSIONS_HOST"]; ok {
		t.Error("binding without env: true set variables")
	}
	if d.Spec.Template.Annotations[mooringv1.BindingsChecksumAnnotation] == "" {
		t.Error("no bindings checksum with an env binding")
	}
}

// The checksum follows the env binding's values (a rotated password changes the Secret's
// resourceVersion) and ignores bindings without env.
func TestBindingsChecksum(t *testing.T) {
	dbBinding, cacheBinding, withBindings := bindingFixtures()
	bound := Resolved{Bindings: []ResolvedBinding{dbBinding, cacheBinding}}
	sum := func(r Resolved) string {
		return Deployment(newApp(withBindings), r).Spec.Template.Annotations[mooringv1.BindingsChecksumAnnotation]
	}
	rotated := Resolved{Bindings: []ResolvedBinding{dbBinding, cacheBinding}}
	rotated.Bindings[0].Version = "h1/43"
	cacheChanged := Resolved{Bindings: []ResolvedBinding{dbBinding, cacheBinding}}
	cacheChanged.Bindings[1].Version = "h3"
	if sum(bound) == sum(rotated) {
		t.Error("checksum did not change with the Secret's resourceVersion")
	}
	if sum(bound) != sum(cacheChanged) {
		t.Error("checksum changed with a binding that sets no variables")
	}
}

func container(d *appsv1.Deployment) corev1.Container { return d.Spec.Template.Spec.Containers[0] }

func checkHA(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	s := d.Spec.Strategy
	if s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy = %+v, want rolling with maxUnavailable 0", s)
	}
	tsc := d.Spec.Template.Spec.TopologySpreadConstraints
	if len(tsc) != 1 || tsc[0].TopologyKey != corev1.LabelHostname || tsc[0].WhenUnsatisfiable != corev1.ScheduleAnyway || tsc[0].MaxSkew != 1 {
		t.Errorf("topology spread = %+v, want hostname, ScheduleAnyway, maxSkew 1", tsc)
	}
}

func TestIngressAndHTTPRoute(t *testing.T) {
	ing := Ingress(newApp(all(withIngress, func(a *mooringv1.App) {
		a.Spec.Expose.IngressClassName = ptr.To("nginx")
		a.Spec.Expose.TLS = &mooringv1.AppTLS{Issuer: "letsencrypt"}
	})))
	rule := ing.Spec.Rules[0]
	path := rule.HTTP.Paths[0]
	if rule.Host != "shop.example.com" || path.Path != "/" || *path.PathType != networkingv1.PathTypePrefix ||
		path.Backend.Service.Name != "web" || path.Backend.Service.Port.Number != 8080 || *ing.Spec.IngressClassName != "nginx" {
		t.Errorf("ingress spec = %+v", ing.Spec)
	}
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "web-tls" || ing.Annotations[CertManagerIssuerAnnotation] != "letsencrypt" {
		t.Errorf("ingress tls = %+v annotations %v, want web-tls from ClusterIssuer letsencrypt", ing.Spec.TLS, ing.Annotations)
	}

	route := HTTPRoute(newApp(withGateway))
	parent := route.Spec.ParentRefs[0]
	if parent.Name != "edge" || *parent.Namespace != "infra" || *parent.SectionName != "https" || route.Spec.Hostnames[0] != "shop.example.com" {
		t.Errorf("route parent %+v hostnames %v", parent, route.Spec.Hostnames)
	}
	rule0 := route.Spec.Rules[0]
	if *rule0.Matches[0].Path.Value != "/api" || rule0.BackendRefs[0].Name != "web" || *rule0.BackendRefs[0].Port != 8080 {
		t.Errorf("route rule = %+v", rule0)
	}
	if Ingress(newApp(withGateway)) != nil || HTTPRoute(newApp(withIngress)) != nil {
		t.Error("an Ingress for a gateway expose or an HTTPRoute for an ingress one")
	}

}

func TestAutoscalerAndDisruptionBudget(t *testing.T) {
	hpa := HorizontalPodAutoscaler(newApp(withAutoscaling))
	if hpa.Spec.ScaleTargetRef.Name != "web" || hpa.Spec.ScaleTargetRef.Kind != "Deployment" || *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 6 ||
		len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU || *hpa.Spec.Metrics[0].Resource.Target.AverageUtilization != DefaultTargetCPUUtilization {
		t.Errorf("hpa spec = %+v", hpa.Spec)
	}
	both := HorizontalPodAutoscaler(newApp(func(a *mooringv1.App) {
		a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MaxReplicas: 3, TargetCPUUtilizationPercentage: ptr.To[int32](60), TargetMemoryUtilizationPercentage: ptr.To[int32](70)}
	}))
	if len(both.Spec.Metrics) != 2 || *both.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 || both.Spec.Metrics[1].Resource.Name != corev1.ResourceMemory {
		t.Errorf("metrics = %+v, want CPU 60 and memory 70", both.Spec.Metrics)
	}
	pdb := PodDisruptionBudget(newApp(withAutoscaling))
	if pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] != "web" {
		t.Errorf("pdb spec = %+v", pdb.Spec)
	}
}

func TestURL(t *testing.T) {
	lb := &networkingv1.Ingress{Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
		Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.7"}}}}}
	tests := map[string]struct {
		mutate func(*mooringv1.App)
		ing    *networkingv1.Ingress
		want   string
	}{
		"not exposed":       {mutate: withPort, want: ""},
		"host":              {mutate: withIngress, want: "http://shop.example.com/"},
		"host with tls":     {mutate: all(withIngress, func(a *mooringv1.App) { a.Spec.Expose.TLS = &mooringv1.AppTLS{SecretName: "c"} }), want: "https://shop.example.com/"},
		"no host, no LB":    {mutate: all(withIngress, func(a *mooringv1.App) { a.Spec.Expose.Host = "" }), want: ""},
		"no host, LB IP":    {mutate: all(withIngress, func(a *mooringv1.App) { a.Spec.Expose.Host = "" }), ing: lb, want: "http://203.0.113.7/"},
		"gateway with path": {mutate: withGateway, want: "http://shop.example.com/api"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := URL(newApp(tt.mutate), tt.ing); got != tt.want {
				t.Errorf("URL = %q, want %q", got, tt.want)
			}
		})
	}
}

// An App admitted before the webhook refused it, whose spec.env sets a variable its env
// binding sets too, still builds a Deployment the API server takes (no duplicate entry):
// spec.env's value wins, and ShadowedBindingEnv names what was left out.
func TestDeploymentBindingEnvShadowedBySpecEnv(t *testing.T) {
	dbBinding, cacheBinding, withBindings := bindingFixtures()
	app := newApp(func(a *mooringv1.App) {
		withBindings(a)
		a.Spec.Env = []corev1.EnvVar{{Name: "ORDERS_DB_PASSWORD", Value: "literal"}, {Name: "ORDERS_DB_HOST", Value: "h"}, {Name: "OTHER", Value: "x"}}
	})
	r := Resolved{Bindings: []ResolvedBinding{dbBinding, cacheBinding}}
	seen := map[string]int{}
	var password corev1.EnvVar
	for _, e := range container(Deployment(app, r)).Env {
		seen[e.Name]++
		if e.Name == "ORDERS_DB_PASSWORD" {
			password = e
		}
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s appears %d times in the container's env", name, n)
		}
	}
	if password.Value != "literal" || password.ValueFrom != nil {
		t.Errorf("ORDERS_DB_PASSWORD = %+v, want spec.env's literal", password)
	}
	if seen["ORDERS_DB_PORT"] != 1 || seen["ORDERS_DB_USERNAME"] != 1 {
		t.Errorf("binding variables spec.env does not set were dropped: %v", seen)
	}
	want := []string{"ORDERS_DB_HOST (spec.bindings[0] orders-db)", "ORDERS_DB_PASSWORD (spec.bindings[0] orders-db)"}
	if got := ShadowedBindingEnv(app, r); !slices.Equal(got, want) {
		t.Errorf("ShadowedBindingEnv = %q, want %q", got, want)
	}
	if got := ShadowedBindingEnv(newApp(withBindings), r); got != nil {
		t.Errorf("ShadowedBindingEnv without spec.env = %q, want none", got)
	}
}
