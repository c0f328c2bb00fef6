package database

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/instance"
)

func newDB(engine v1beta1.DatabaseEngine, mutate func(*v1beta1.DatabaseCluster)) *v1beta1.DatabaseCluster {
	db := &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: v1beta1.DatabaseClusterSpec{Engine: engine, ReplicaCount: 3, Version: "17",
			SecretName: "orders-credentials", DeletionPolicy: v1beta1.DeletionRetain},
	}
	if mutate != nil {
		mutate(db)
	}
	return db
}

func TestStatefulSet(t *testing.T) {
	tests := map[string]struct {
		db               *v1beta1.DatabaseCluster
		image, retention string
		port             int32
		size             string
	}{
		"postgresql": {db: newDB(v1beta1.PostgreSQL, nil), image: "docker.io/library/postgres:17", port: 5432, size: "1Gi", retention: "Retain"},
		"mariadb":    {db: newDB(v1beta1.MariaDB, func(d *v1beta1.DatabaseCluster) { d.Spec.Version = "11.8" }), image: "docker.io/library/mariadb:11.8", port: 3306, size: "1Gi", retention: "Retain"},
		"mysql with storage and Delete": {
			db: newDB(v1beta1.MySQL, func(d *v1beta1.DatabaseCluster) {
				d.Spec.Version = "8.4"
				d.Spec.Storage = v1beta1.StorageSpec{Size: ptr.To(resource.MustParse("10Gi")), StorageClassName: ptr.To("fast")}
				d.Spec.DeletionPolicy = v1beta1.DeletionDelete
			}),
			image: "docker.io/library/mysql:8.4", port: 3306, size: "10Gi", retention: "Delete",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			sts, err := StatefulSet(tt.db)
			if err != nil {
				t.Fatal(err)
			}
			c := sts.Spec.Template.Spec.Containers[0]
			if c.Image != tt.image || *sts.Spec.Replicas != 3 || sts.Spec.ServiceName != "orders-headless" {
				t.Errorf("image %s replicas %d service %s", c.Image, *sts.Spec.Replicas, sts.Spec.ServiceName)
			}
			if c.Ports[0].ContainerPort != tt.port || c.VolumeMounts[0].MountPath != instance.DataDir {
				t.Errorf("port %d mount %s", c.Ports[0].ContainerPort, c.VolumeMounts[0].MountPath)
			}
			// The server image runs Mooring's instance manager, which the init container
			// copied from the operator's image.
			pod := sts.Spec.Template.Spec
			if len(pod.InitContainers) != 1 || pod.InitContainers[0].Image != InstanceManagerImage() ||
				!slices.Equal(pod.InitContainers[0].Command, []string{"/mooring", "instance", "install", instance.BinDir}) {
				t.Errorf("init containers %+v, want the instance manager's install from %s", pod.InitContainers, InstanceManagerImage())
			}
			wantCmd := []string{instance.ManagerPath(instance.BinDir), "instance", "run", "--engine=" + string(tt.db.Spec.Engine),
				"--version=" + tt.db.Spec.Version, "--primary-host=orders-0.orders-headless", "--port=" + strconv.Itoa(int(tt.port)),
				"--memory-limit=536870912", // the default limit, 512Mi
				"--tls-dir=" + instance.TLSDir, "--client-ca-dir=" + instance.ClientCADir, "--replication-secret-dir=" + instance.ReplicationSecretDir}
			if !slices.Equal(c.Command, wantCmd) {
				t.Errorf("command %v, want %v", c.Command, wantCmd)
			}
			if c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet == nil ||
				c.LivenessProbe.HTTPGet.Path != "/healthz" || c.StartupProbe != nil {
				t.Errorf("probes %+v %+v, want the manager's /readyz and /healthz", c.ReadinessProbe, c.LivenessProbe)
			}
			if psc := pod.SecurityContext; *psc.RunAsUser != 999 || *psc.FSGroup != 999 || !*psc.RunAsNonRoot {
				t.Errorf("pod security context %+v, want user and fsGroup 999 (the official images' database user)", psc)
			}
			vct := sts.Spec.VolumeClaimTemplates[0]
			if got := vct.Spec.Resources.Requests[corev1.ResourceStorage]; vct.Name != DataVolume || got.String() != tt.size {
				t.Errorf("claim template %s size %s, want data %s", vct.Name, got.String(), tt.size)
			}
			if string(sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted) != tt.retention ||
				sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
				t.Errorf("retention %+v, want whenDeleted %s and whenScaled Retain", sts.Spec.PersistentVolumeClaimRetentionPolicy, tt.retention)
			}
			// Credentials only as files of the Secrets, never in the environment or arguments.
			for _, e := range append(c.Env, pod.InitContainers[0].Env...) {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					t.Errorf("env %s comes from a Secret; credentials are files", e.Name)
				}
			}
			if strings.Contains(strings.ToLower(strings.Join(c.Command, " ")), "password") {
				t.Errorf("command line mentions a password: %v", c.Command)
			}
			sc := c.SecurityContext
			if !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("security context %+v is not restricted", sc)
			}
		})
	}
}

func TestServices(t *testing.T) {
	db := newDB(v1beta1.PostgreSQL, nil)
	h := HeadlessService(db)
	if h.Name != "orders-headless" || h.Spec.ClusterIP != corev1.ClusterIPNone || !h.Spec.PublishNotReadyAddresses {
		t.Errorf("headless service %s %+v", h.Name, h.Spec)
	}
	p := PrimaryService(db)
	if p.Name != "orders" || p.Spec.Selector[podNameLabel] != "orders-0" || p.Spec.Ports[0].Port != 5432 {
		t.Errorf("primary service %s %+v, want it to select orders-0 on 5432", p.Name, p.Spec)
	}
	if got := PrimaryEndpoint(db); got != "orders.shop.svc:5432" {
		t.Errorf("endpoint %s", got)
	}
}

func TestCredentialsSecret(t *testing.T) {
	s := CredentialsSecret(newDB(v1beta1.MySQL, nil), "pw")
	if s.Name != "orders-credentials" || s.StringData[UsernameKey] == "" || s.StringData[PasswordKey] != "pw" || len(s.OwnerReferences) != 0 {
		t.Errorf("secret %s %v owners %v", s.Name, s.StringData, s.OwnerReferences)
	}
	a, _ := randomPassword()
	b, _ := randomPassword()
	if len(a) != 24 || a == b {
		t.Errorf("passwords %q and %q: want 24 random characters each", a, b)
	}
}

func TestDeriveStatus(t *testing.T) {
	sts := func(gen, observed int64, replicas, ready, updated int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: observed, Replicas: replicas, ReadyReplicas: ready, UpdatedReplicas: updated}}
	}
	tests := map[string]struct {
		sts         *appsv1.StatefulSet
		secretReady bool
		phase       v1beta1.DatabaseClusterPhase
	}{
		"waiting for secret": {sts: nil, secretReady: false, phase: v1beta1.DatabasePending},
		"no pod ready":       {sts: sts(1, 1, 1, 0, 1), secretReady: true, phase: v1beta1.DatabasePending},
		"some ready":         {sts: sts(1, 1, 3, 2, 3), secretReady: true, phase: v1beta1.DatabaseNotReady},
		"all ready":          {sts: sts(1, 1, 3, 3, 3), secretReady: true, phase: v1beta1.DatabaseRunning},
		"not observed":       {sts: sts(2, 1, 3, 3, 3), secretReady: true, phase: v1beta1.DatabaseNotReady},
		// The pods serve without the Secret: the phase and counts are theirs.
		"secret lost, pods ready": {sts: sts(1, 1, 3, 3, 3), secretReady: false, phase: v1beta1.DatabaseRunning},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			db := newDB(v1beta1.PostgreSQL, nil)
			deriveStatus(db, tt.sts, tt.secretReady)
			if db.Status.Phase != tt.phase {
				t.Errorf("phase %s, want %s", db.Status.Phase, tt.phase)
			}
			if db.Status.PrimaryEndpoint != "orders.shop.svc:5432" || db.Status.Selector == "" {
				t.Errorf("endpoint %q selector %q", db.Status.PrimaryEndpoint, db.Status.Selector)
			}
			if tt.sts != nil && (db.Status.Replicas != tt.sts.Status.Replicas || db.Status.ReadyReplicas != tt.sts.Status.ReadyReplicas) {
				t.Errorf("replicas %d ready %d, want the StatefulSet's %d and %d",
					db.Status.Replicas, db.Status.ReadyReplicas, tt.sts.Status.Replicas, tt.sts.Status.ReadyReplicas)
			}
			if !tt.secretReady && !engine.HasCondition(db, mooringv1.ConditionReady, metav1.ConditionFalse, v1beta1.ReasonSecretNotFound) {
				t.Errorf("Ready %+v, want False SecretNotFound", db.Status.Conditions)
			}
		})
	}
}

// The binding ConfigMap carries the servicebinding.io entries that are not secret; the
// credentials stay in their Secret, which status.binding names.
func TestBindingConfigMap(t *testing.T) {
	tests := map[string]struct {
		engine v1beta1.DatabaseEngine
		want   map[string]string
	}{
		"postgresql": {engine: v1beta1.PostgreSQL, want: map[string]string{"type": "postgresql", "provider": "mooring", "host": "orders.shop.svc", "port": "5432", "database": "postgres"}},
		"mysql":      {engine: v1beta1.MySQL, want: map[string]string{"type": "mysql", "provider": "mooring", "host": "orders.shop.svc", "port": "3306", "database": "app"}},
		"mariadb":    {engine: v1beta1.MariaDB, want: map[string]string{"type": "mariadb", "provider": "mooring", "host": "orders.shop.svc", "port": "3306", "database": "app"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			db := newDB(tt.engine, func(db *v1beta1.DatabaseCluster) {
				db.Name, db.Namespace, db.Spec.SecretName = "orders", "shop", "orders-credentials"
			})
			cm := BindingConfigMap(db)
			if cm.Name != "orders-binding" || !maps.Equal(cm.Data, tt.want) {
				t.Errorf("binding ConfigMap %s = %v, want orders-binding %v", cm.Name, cm.Data, tt.want)
			}
			if st := bindingStatus(db); st.Name != "orders-binding" || st.SecretName != "orders-credentials" {
				t.Errorf("status.binding = %+v", st)
			}
		})
	}
}

// Every cluster's pods prefer one per node, counting only the cluster's own database pods;
// with more than one instance, a budget lets a drain take one of them at a time (never the
// primary and a replica at once), and a single instance has none (it would only say
// nothing, or hold the node's drains).
func TestSpreadAndDisruptionBudget(t *testing.T) {
	tests := map[string]struct {
		instances  int32
		wantBudget bool
	}{
		"one instance":   {instances: 1, wantBudget: false},
		"two instances":  {instances: 2, wantBudget: true},
		"five instances": {instances: 5, wantBudget: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			db := newDB(v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = tt.instances })
			sts, err := StatefulSet(db)
			if err != nil {
				t.Fatal(err)
			}
			podLabels := labels.Set(sts.Spec.Template.Labels)
			jobPods := []labels.Set{labels.Set(engine.Labels(credentialsComponent, db.Name)), labels.Set(engine.Labels(restoreComponent, db.Name))}
			selects := func(what string, sel *metav1.LabelSelector) {
				t.Helper()
				s, err := metav1.LabelSelectorAsSelector(sel)
				if err != nil {
					t.Fatal(err)
				}
				if !s.Matches(podLabels) {
					t.Errorf("%s selector %s does not select the database pods %v", what, s, podLabels)
				}
				for _, l := range jobPods {
					if s.Matches(l) {
						t.Errorf("%s selector %s selects a Job's pod %v", what, s, l)
					}
				}
			}
			spread := sts.Spec.Template.Spec.TopologySpreadConstraints
			if len(spread) != 1 || spread[0].TopologyKey != corev1.LabelHostname || spread[0].WhenUnsatisfiable != corev1.ScheduleAnyway || spread[0].MaxSkew != 1 {
				t.Fatalf("topology spread %+v, want one soft constraint of maxSkew 1 on the hostname", spread)
			}
			selects("spread", spread[0].LabelSelector)

			pdb := PodDisruptionBudget(db)
			var inChildren *policyv1.PodDisruptionBudget
			for _, c := range Children(db) {
				if p, ok := c.(*policyv1.PodDisruptionBudget); ok {
					inChildren = p
				}
			}
			if (pdb != nil) != tt.wantBudget || (inChildren != nil) != tt.wantBudget {
				t.Fatalf("a budget: %v, among the children: %v; want one: %v", pdb != nil, inChildren != nil, tt.wantBudget)
			}
			if pdb == nil {
				return
			}
			if pdb.Name != db.Name || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil {
				t.Errorf("budget %s %+v, want %s with maxUnavailable 1 over all instances", pdb.Name, pdb.Spec, db.Name)
			}
			selects("budget", pdb.Spec.Selector)
		})
	}
}

// TestDatabaseResources: the container gets spec.resources, or the documented defaults,
// and the manager the memory limit its settings follow; no limit, no flag.
func TestDatabaseResources(t *testing.T) {
	q := resource.MustParse
	tests := map[string]struct {
		resources *corev1.ResourceRequirements
		want      corev1.ResourceRequirements
		wantFlag  string
	}{
		"defaults": {
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("512Mi")}},
			wantFlag: "--memory-limit=536870912",
		},
		"the user's": {
			resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}, Limits: corev1.ResourceList{corev1.ResourceMemory: q("4Gi"), corev1.ResourceCPU: q("2")}},
			want:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}, Limits: corev1.ResourceList{corev1.ResourceMemory: q("4Gi"), corev1.ResourceCPU: q("2")}},
			wantFlag:  "--memory-limit=4294967296",
		},
		"requests only: no memory flag": {
			resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}},
			want:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			db := &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders"},
				Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.MariaDB, Version: "11.8", SecretName: "c", Resources: tc.resources}}
			sts, err := StatefulSet(db)
			if err != nil {
				t.Fatal(err)
			}
			c := sts.Spec.Template.Spec.Containers[0]
			if !equality.Semantic.DeepEqual(c.Resources, tc.want) {
				t.Errorf("resources %+v, want %+v", c.Resources, tc.want)
			}
			var flags []string
			for _, a := range c.Command {
				if strings.HasPrefix(a, "--memory-limit") {
					flags = append(flags, a)
				}
			}
			if want := []string{tc.wantFlag}; (tc.wantFlag == "" && len(flags) != 0) || (tc.wantFlag != "" && !slices.Equal(flags, want)) {
				t.Errorf("memory flags %q, want %q", flags, tc.wantFlag)
			}
		})
	}
}
