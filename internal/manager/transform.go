package manager

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// The cache transforms of the child kinds: allowlists of what some controller reads of a
// cached child, besides its metadata (identity, labels, annotations, owner references,
// generation), which every trimmed child keeps whole. engine.Trim records a hash of the
// rest before dropping it, and the engine reads a child whole when that hash changes
// (internal/engine/cachetrim.go), so dropping a field never hides a change of it.
// Adding a read of a cached child's field means adding the field here; the envtest
// suites of the controllers run with these transforms.

// childTransforms are the transforms of the cached child kinds, by type.
func childTransforms() map[client.Object]toolscache.TransformFunc {
	return map[client.Object]toolscache.TransformFunc{
		&appsv1.Deployment{}:                     engine.Trim(keepDeployment),
		&appsv1.StatefulSet{}:                    engine.Trim(keepStatefulSet),
		&corev1.ConfigMap{}:                      engine.Trim(keepConfigMap),
		&corev1.PersistentVolumeClaim{}:          engine.Trim(keepClaim),
		&batchv1.CronJob{}:                       engine.Trim(keepCronJob),
		&corev1.Service{}:                        engine.Trim(engine.KeepStatus[*corev1.Service]),
		&policyv1.PodDisruptionBudget{}:          engine.Trim(engine.KeepStatus[*policyv1.PodDisruptionBudget]),
		&autoscalingv2.HorizontalPodAutoscaler{}: engine.Trim(engine.KeepStatus[*autoscalingv2.HorizontalPodAutoscaler]),
		&networkingv1.Ingress{}:                  engine.Trim(engine.KeepStatus[*networkingv1.Ingress]),
		&batchv1.Job{}:                           engine.Trim(engine.KeepStatus[*batchv1.Job]),
		&networkingv1.NetworkPolicy{}:            engine.Trim(engine.KeepStatus[*networkingv1.NetworkPolicy]),
	}
}

// keepDeployment keeps the replicas (an App's status wants them when an autoscaler owns
// them), the ConfigMaps projected volumes name (an App's bindings that resolved before)
// and the status counts and conditions a rollout is judged by.
func keepDeployment(d *appsv1.Deployment) {
	var volumes []corev1.Volume
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		var sources []corev1.VolumeProjection
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil {
				sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: src.ConfigMap.LocalObjectReference}})
			}
		}
		volumes = append(volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: sources}}})
	}
	d.Spec = appsv1.DeploymentSpec{Replicas: d.Spec.Replicas}
	d.Spec.Template.Spec.Volumes = volumes
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration:  d.Status.ObservedGeneration,
		Replicas:            d.Status.Replicas,
		UpdatedReplicas:     d.Status.UpdatedReplicas,
		ReadyReplicas:       d.Status.ReadyReplicas,
		AvailableReplicas:   d.Status.AvailableReplicas,
		UnavailableReplicas: d.Status.UnavailableReplicas,
		Conditions:          d.Status.Conditions,
	}
}

// keepStatefulSet keeps what a DatabaseCluster reads of its StatefulSet: the containers'
// images and commands (a Bitnami-era set is kept as it is), the volume claim templates'
// requests (storage growth), the retention policy (deletion) and the status.
func keepStatefulSet(sts *appsv1.StatefulSet) {
	containers := make([]corev1.Container, 0, len(sts.Spec.Template.Spec.Containers))
	for _, c := range sts.Spec.Template.Spec.Containers {
		containers = append(containers, corev1.Container{Name: c.Name, Image: c.Image, Command: c.Command})
	}
	claims := make([]corev1.PersistentVolumeClaim, 0, len(sts.Spec.VolumeClaimTemplates))
	for _, c := range sts.Spec.VolumeClaimTemplates {
		claims = append(claims, corev1.PersistentVolumeClaim{ObjectMeta: c.ObjectMeta,
			Spec: corev1.PersistentVolumeClaimSpec{Resources: c.Spec.Resources}})
	}
	sts.Spec = appsv1.StatefulSetSpec{
		Replicas:                             sts.Spec.Replicas,
		PersistentVolumeClaimRetentionPolicy: sts.Spec.PersistentVolumeClaimRetentionPolicy,
		VolumeClaimTemplates:                 claims,
	}
	sts.Spec.Template.Spec.Containers = containers
}

// keepConfigMap keeps the data of the ConfigMaps other controllers read (the bindings a
// CacheInstance or a DatabaseCluster publishes, read by the Apps bound to them) and drops
// an App's own: its spec.config, read by nobody but its pods.
func keepConfigMap(cm *corev1.ConfigMap) {
	if cm.Labels[mooringv1.ComponentLabel] == mooringv1.AppComponent {
		cm.Data, cm.BinaryData = nil, nil
	}
}

// keepClaim keeps a volume's requests and storage class (a Backup grows its own volume; a
// DatabaseCluster names the class that refuses to grow one) and status.
func keepClaim(pvc *corev1.PersistentVolumeClaim) {
	pvc.Spec = corev1.PersistentVolumeClaimSpec{Resources: pvc.Spec.Resources, StorageClassName: pvc.Spec.StorageClassName}
}

// keepCronJob keeps whether a Backup's CronJob is suspended, and its status.
func keepCronJob(cj *batchv1.CronJob) {
	cj.Spec = batchv1.CronJobSpec{Suspend: cj.Spec.Suspend}
}
