package database

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/availability"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/instance"
)

const (
	// Component is the app.kubernetes.io/component of a DatabaseCluster's children.
	Component = v1beta1.DatabaseComponent
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
	// probeTimeout is a second more than the manager's own check of the server (4 s).
	probeTimeout = 5
	// dbUser is the uid and gid of the database user in the official postgres, mysql
	// and mariadb images (and in the local stand-ins, internal/nodeimage).
	dbUser int64 = 999
	// terminationGrace gives the manager's clean shutdown (50 s) room.
	terminationGrace = 60
	statusPortName   = "status"
	binVolume        = "mooring-bin"
	runVolume        = "mooring-run"
	adminVolume      = "admin-secret"
	appVolume        = "app-secret"
)

// Children are the cluster's children besides its StatefulSet, in apply order: the
// headless, primary and read-only Services, the binding and state ConfigMaps and, with more than one
// instance, the PodDisruptionBudget. The StatefulSet is Sync's to add: a refused volume
// expansion builds it with the volumes' old size, and a Bitnami-era one is kept as it is.
func Children(db *v1beta1.DatabaseCluster) []client.Object {
	out := []client.Object{HeadlessService(db), PrimaryService(db), ReadOnlyService(db), BindingConfigMap(db), StateConfigMap(db)}
	if pdb := PodDisruptionBudget(db); pdb != nil {
		out = append(out, pdb)
	}
	return out
}

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

// StatefulSet is the cluster's StatefulSet. Its pods run the server image with
// Mooring's instance manager as the container's command: an init container copies the
// manager from the operator's image into an emptyDir, and the manager initialises,
// configures and runs the server (internal/instance). The credentials reach it as files
// of the two Secrets, never through the environment or arguments.
func StatefulSet(db *v1beta1.DatabaseCluster) (*appsv1.StatefulSet, error) {
	e, err := engineFor(db)
	if err != nil {
		return nil, err
	}
	restricted := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To(dbUser),
			RunAsGroup:               ptr.To(dbUser),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	manager := instance.ManagerPath(instance.BinDir)
	install := corev1.Container{
		Name:            "instance-manager",
		Image:           InstanceManagerImage(),
		Command:         []string{"/mooring", "instance", "install", instance.BinDir},
		VolumeMounts:    []corev1.VolumeMount{{Name: binVolume, MountPath: instance.BinDir}},
		SecurityContext: restricted(),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
	}
	httpProbe := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(statusPortName)}}
	}
	container := corev1.Container{
		Name:  containerName,
		Image: serverImage(db.Spec.Engine) + ":" + db.Spec.Version,
		Command: []string{manager, "instance", "run",
			"--engine=" + string(db.Spec.Engine), "--version=" + db.Spec.Version,
			"--primary-host=" + fmt.Sprintf("%s.%s", PrimaryPodName(db), HeadlessServiceName(db)),
			"--port=" + strconv.Itoa(int(e.port))},
		Resources: Resources(db),
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + podIndexLabel + "']"}}},
		},
		Ports: []corev1.ContainerPort{
			{Name: "db", ContainerPort: e.port, Protocol: corev1.ProtocolTCP},
			{Name: statusPortName, ContainerPort: instance.StatusPort, Protocol: corev1.ProtocolTCP},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: DataVolume, MountPath: instance.DataDir},
			{Name: runVolume, MountPath: instance.RunDir},
			{Name: binVolume, MountPath: instance.BinDir, ReadOnly: true},
			{Name: adminVolume, MountPath: instance.AdminSecretDir, ReadOnly: true},
			{Name: appVolume, MountPath: instance.AppSecretDir, ReadOnly: true},
			{Name: stateVolume, MountPath: instance.ClusterStateDir, ReadOnly: true},
		},
		// The manager answers /healthz while it lives, also while a fault keeps the
		// server down (so a fault is reported, not crash-looped); /readyz asks the server.
		// A replica's first copy of the primary may take long: readiness simply waits.
		ReadinessProbe: &corev1.Probe{ProbeHandler: httpProbe("/readyz"), PeriodSeconds: 5, TimeoutSeconds: probeTimeout, FailureThreshold: 3},
		LivenessProbe:  &corev1.Probe{ProbeHandler: httpProbe("/healthz"), PeriodSeconds: 10, TimeoutSeconds: probeTimeout, FailureThreshold: 6},
		// The manager writes the fault that stopped it; the kubelet shows it in the
		// container's last state.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restricted(),
	}
	secretVolume := func(name, secret string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, DefaultMode: ptr.To[int32](0o440),
			Items: []corev1.KeyToPath{{Key: UsernameKey, Path: UsernameKey}, {Key: PasswordKey, Path: PasswordKey}},
		}}}
	}
	volumes := []corev1.Volume{
		{Name: runVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("16Mi"))}}},
		{Name: binVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("256Mi"))}}},
		secretVolume(adminVolume, AdminSecretName(db)),
		secretVolume(appVolume, db.Spec.SecretName),
		stateVolumeSource(db),
	}
	container.Command = append(container.Command, memoryLimitArgs(container.Resources)...)
	tlsVolumes, tlsMounts, tlsArgs := securityPodParts(db)
	volumes = append(volumes, tlsVolumes...)
	container.VolumeMounts = append(container.VolumeMounts, tlsMounts...)
	container.Command = append(container.Command, tlsArgs...)
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
					InitContainers: []corev1.Container{install},
					Containers:     []corev1.Container{container},
					Volumes:        volumes,
					// Instances on one node would all go with it. Also with one instance,
					// so that adding a replica does not change the template (which would
					// restart the primary to add it).
					TopologySpreadConstraints:     availability.SpreadOverNodes(Component, db.Name),
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](terminationGrace),
					// The official images' database users are 999:999; the volume is
					// given to that group, changed only when its root is not yet (a large
					// volume is not walked at every start).
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:        ptr.To(true),
						RunAsUser:           ptr.To(dbUser),
						RunAsGroup:          ptr.To(dbUser),
						FSGroup:             ptr.To(dbUser),
						FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
						SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
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
