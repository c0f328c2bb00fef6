package app

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/availability"
	"github.com/mooringhq/mooring/internal/engine"
)

// DefaultTargetCPUUtilization is the autoscaler's CPU target when spec.autoscaling names
// no target (the HorizontalPodAutoscaler's own default).
const DefaultTargetCPUUtilization = int32(80)

// HighlyAvailable reports whether the App gets the availability defaults: a
// PodDisruptionBudget, pods spread over nodes, rolling updates that never go below the
// wanted count, and serving pods that pause before they stop, until the Service has let
// them go. Unset, they follow spec.autoscaling only, so an App written before the
// field existed keeps its exact Deployment.
func HighlyAvailable(app *mooringv1.App) bool {
	switch {
	case app.Spec.HighAvailability == nil:
		return app.Spec.Autoscaling != nil
	case !*app.Spec.HighAvailability:
		return false
	default:
		return app.Spec.Autoscaling != nil || ptr.Deref(app.Spec.Replicas, 1) > 1
	}
}

// spreadAndRollSafely spreads the pods over nodes (best effort: a cluster with fewer nodes
// than pods still schedules them all) and replaces pods only once their successors are up.
func spreadAndRollSafely(d *appsv1.Deployment) {
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(0))},
	}
	d.Spec.Template.Spec.TopologySpreadConstraints = availability.SpreadOverNodes(Component, d.Name)
}

// PodDisruptionBudget lets voluntary disruptions (node drains) take one pod at a time;
// nil unless the App is HighlyAvailable.
func PodDisruptionBudget(app *mooringv1.App) *policyv1.PodDisruptionBudget {
	if !HighlyAvailable(app) {
		return nil
	}
	return availability.DisruptionBudget(Component, app.Name)
}

// HorizontalPodAutoscaler scales the App's Deployment; nil without spec.autoscaling.
func HorizontalPodAutoscaler(app *mooringv1.App) *autoscalingv2.HorizontalPodAutoscaler {
	as := app.Spec.Autoscaling
	if as == nil {
		return nil
	}
	utilization := func(r corev1.ResourceName, pct int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: r, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(pct),
			}},
		}
	}
	var metrics []autoscalingv2.MetricSpec
	if as.TargetCPUUtilizationPercentage != nil || as.TargetMemoryUtilizationPercentage == nil {
		metrics = append(metrics, utilization(corev1.ResourceCPU, ptr.Deref(as.TargetCPUUtilizationPercentage, DefaultTargetCPUUtilization)))
	}
	if as.TargetMemoryUtilizationPercentage != nil {
		metrics = append(metrics, utilization(corev1.ResourceMemory, *as.TargetMemoryUtilizationPercentage))
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Labels: engine.Labels(Component, app.Name)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: app.Name},
			MinReplicas:    ptr.To(ptr.Deref(as.MinReplicas, 1)),
			MaxReplicas:    as.MaxReplicas,
			Metrics:        metrics,
		},
	}
}
