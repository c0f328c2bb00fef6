package database

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

const (
	// Component is the app.kubernetes.io/component of a DatabaseCluster's children.
	Component = "database"
	// DataVolume is the name of the volumeClaimTemplate; PVCs are data-<name>-<index>.
	DataVolume = "data"
	// UsernameKey is the user name's key in the credentials Secret.
	UsernameKey = "username"
	// PasswordKey is the password's key in the credentials Secret.
	PasswordKey   = "password"
	containerName = "database"
	podIndexLabel = "apps.kubernetes.io/pod-index"
	podNameLabel  = "statefulset.kubernetes.io/pod-name"
	defaultSize   = "1Gi"
	// probeTimeout is a second more than the scripts' own connect timeouts, so that a
	// server slow to answer fails the check rather than the kubelet killing the client.
	probeTimeout = 6
	// startupFailures × 10 s is how long a pod may take to answer: one hour.
	startupFailures = 360
)

// HeadlessServiceName names the Service that gives each pod a DNS name.
func HeadlessServiceName(db *v1beta1.DatabaseCluster) string { return db.Name + "-headless" }

// PrimaryPodName is the primary's pod: the StatefulSet's pod 0.
func PrimaryPodName(db *v1beta1.DatabaseCluster) string { return db.Name + "-0" }

// StorageSize is the requested size of each data volume.
func StorageSize(db *v1beta1.DatabaseCluster) resource.Quantity {
	if db.Spec.Storage.Size != nil {
		return *db.Spec.Storage.Size
	}
	return resource.MustParse(defaultSize)
}

// StatefulSet is the cluster's StatefulSet.
func StatefulSet(db *v1beta1.DatabaseCluster) (*appsv1.StatefulSet, error) {
	e, err := engineFor(db)
	if err != nil {
		return nil, err
	}
	secretRef := func(secret, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
		}}
	}
	app := func(key string) *corev1.EnvVarSource { return secretRef(db.Spec.SecretName, key) }
	// The superuser and replication passwords are apart from the application's, so that
	// changing the application's password (credentials.go) leaves Mooring able to log in
	// and the replicas able to follow the primary.
	admin := func() *corev1.EnvVarSource { return secretRef(AdminSecretName(db), PasswordKey) }
	env := []corev1.EnvVar{
		{Name: "POD_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + podIndexLabel + "']"}}},
		// The probes reach the server at the pod's own address, as clients do: the
		// images' set-up runs a temporary server that listens on 127.0.0.1 only.
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "PRIMARY_HOST", Value: fmt.Sprintf("%s.%s", PrimaryPodName(db), HeadlessServiceName(db))},
		// Credentials come from the Secrets through the environment, never the command line.
		{Name: e.userEnv, ValueFrom: app(UsernameKey)},
		{Name: e.passwordEnv, ValueFrom: app(PasswordKey)},
		{Name: e.extraPasswordEnv, ValueFrom: admin()},
		{Name: e.replUserEnv, Value: "replicator"},
		{Name: e.replPasswordEnv, ValueFrom: admin()},
	}
	if e.primaryPasswordEnv != "" {
		env = append(env, corev1.EnvVar{Name: e.primaryPasswordEnv, ValueFrom: admin()})
	}
	run := func(script string) corev1.ProbeHandler {
		return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", script}}}
	}
	container := corev1.Container{
		Name:         containerName,
		Image:        serverImage(db.Spec.Engine) + ":" + db.Spec.Version,
		Command:      []string{"/bin/sh", "-c", e.runScript},
		Env:          env,
		Ports:        []corev1.ContainerPort{{Name: "db", ContainerPort: e.port, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{{Name: DataVolume, MountPath: e.dataPath}},
		// A TCP check passes while PostgreSQL recovers and refuses queries; readiness asks
		// the server itself. Crash recovery, a MySQL 8.0 to 8.4 upgrade or a replica's
		// first copy of the primary can take long: the startup probe allows an hour
		// (as CloudNativePG's default startDelay), and liveness starts only after it.
		ReadinessProbe: &corev1.Probe{ProbeHandler: run(e.readyScript), PeriodSeconds: 10, TimeoutSeconds: probeTimeout, FailureThreshold: 3},
		StartupProbe:   &corev1.Probe{ProbeHandler: run(e.readyScript), PeriodSeconds: 10, TimeoutSeconds: probeTimeout, FailureThreshold: startupFailures},
		LivenessProbe:  &corev1.Probe{ProbeHandler: run(e.aliveScript), PeriodSeconds: 10, TimeoutSeconds: probeTimeout, FailureThreshold: 6},
		// The Bitnami images run as user 1001 and need nothing more.
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](1001),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	retention := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if db.Spec.DeletionPolicy == v1beta1.DeletionDelete {
		retention = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: db.Name, Labels: engine.Labels(Component, db.Name)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(max(db.Spec.ReplicaCount, 1)),
			ServiceName: HeadlessServiceName(db),
			Selector:    &metav1.LabelSelector{MatchLabels: engine.SelectorLabels(Component, db.Name)},
			// The primary (pod 0) starts, and is ready, before any replica.
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			// Scaling down never deletes data; Delete policy takes the volumes with the set.
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: retention, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: engine.Labels(Component, db.Name)},
				Spec: corev1.PodSpec{
					Containers:                   []corev1.Container{container},
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						FSGroup:        ptr.To[int64](1001),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				// The PVCs carry Mooring's labels, so the cache sees them for resizing.
				ObjectMeta: metav1.ObjectMeta{Name: DataVolume, Labels: engine.Labels(Component, db.Name)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: db.Spec.Storage.StorageClassName,
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: StorageSize(db)},
					},
				},
			}},
		},
	}, nil
}

// HeadlessService gives each pod a stable DNS name; replicas find the primary through it.
func HeadlessService(db *v1beta1.DatabaseCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: HeadlessServiceName(db), Labels: engine.Labels(Component, db.Name)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  engine.SelectorLabels(Component, db.Name),
			// Replicas must reach the primary before it is ready to set up replication.
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{servicePort(db)},
		},
	}
}

// PrimaryService is what applications connect to: it selects only pod 0.
func PrimaryService(db *v1beta1.DatabaseCluster) *corev1.Service {
	selector := engine.SelectorLabels(Component, db.Name)
	selector[podNameLabel] = PrimaryPodName(db)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: db.Name, Labels: engine.Labels(Component, db.Name)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector,
			Ports:    []corev1.ServicePort{servicePort(db)},
		},
	}
}

func servicePort(db *v1beta1.DatabaseCluster) corev1.ServicePort {
	p := Port(db)
	return corev1.ServicePort{Name: "db", Protocol: corev1.ProtocolTCP, Port: p, TargetPort: intstr.FromString("db")}
}

// CredentialsSecret is the generated Secret, with the given password. It is created once
// and never updated, so the password it holds stays the one the database was set up with.
func CredentialsSecret(db *v1beta1.DatabaseCluster, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: db.Spec.SecretName, Namespace: db.Namespace, Labels: engine.Labels(Component, db.Name)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{UsernameKey: engines[db.Spec.Engine].user, PasswordKey: password},
	}
}

// PrimaryEndpoint is host:port of the primary Service.
func PrimaryEndpoint(db *v1beta1.DatabaseCluster) string {
	return fmt.Sprintf("%s.%s.svc:%d", db.Name, db.Namespace, Port(db))
}
