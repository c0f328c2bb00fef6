package app

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/appsecurity"
	"github.com/mooringhq/mooring/internal/engine"
)

const (
	// Component is the app.kubernetes.io/component of an App's children.
	Component = mooringv1.AppComponent
	// ContainerName is the name of the App's one container.
	ContainerName = "app"
	// ConfigKey is the ConfigMap key holding spec.config.
	ConfigKey = "config"
	// ConfigEnvVar is the environment variable the container reads spec.config from.
	ConfigEnvVar = "APP_CONFIG"
	portName     = "http"
)

// ConfigMapName is the name of the ConfigMap that holds an App's configuration.
func ConfigMapName(app *mooringv1.App) string { return app.Name + "-config" }

// Children returns every child the App should have right now, in apply order: the
// ConfigMap before the Deployment whose pods read it, the Service before what routes to
// it. r carries what the children depend on beyond the spec (the handler looks it up).
func Children(app *mooringv1.App, r Resolved) []client.Object {
	var out []client.Object
	if cm := ConfigMap(app); cm != nil {
		out = append(out, cm)
	}
	out = append(out, Deployment(app, r))
	if svc := Service(app); svc != nil {
		out = append(out, svc)
	}
	if pdb := PodDisruptionBudget(app); pdb != nil {
		out = append(out, pdb)
	}
	if hpa := HorizontalPodAutoscaler(app); hpa != nil {
		out = append(out, hpa)
	}
	if ing := Ingress(app); ing != nil {
		out = append(out, ing)
	}
	if r.GatewayAPI {
		if route := HTTPRoute(app); route != nil {
			out = append(out, route)
		}
	}
	return out
}

// preStopSleepSeconds is how long a serving pod waits after it is told to stop before it
// receives SIGTERM: enough for the endpoint change to reach every node's kube-proxy.
const preStopSleepSeconds = 5

// Deployment is the App's Deployment.
func Deployment(app *mooringv1.App, r Resolved) *appsv1.Deployment {
	selector := engine.SelectorLabels(Component, app.Name)
	container := corev1.Container{
		Name:            ContainerName,
		Image:           app.Spec.Image,
		Command:         app.Spec.Command,
		Args:            app.Spec.Args,
		EnvFrom:         app.Spec.EnvFrom,
		Env:             env(app, r),
		Resources:       app.Spec.Resources,
		SecurityContext: appsecurity.Container(app),
	}
	if app.Spec.Port != nil {
		container.Ports = []corev1.ContainerPort{{Name: portName, ContainerPort: *app.Spec.Port, Protocol: corev1.ProtocolTCP}}
		container.ReadinessProbe = &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(portName)}},
		}
		// A highly available App's pod being replaced keeps serving while kube-proxy and
		// ingress controllers take it out of the Service: without the pause, the SIGTERM
		// races that removal and a client sees a refused connection in a rollout (seen on
		// a real node). Only with the availability defaults, so that an App written
		// before keeps its exact Deployment.
		if HighlyAvailable(app) {
			container.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
				Sleep: &corev1.SleepAction{Seconds: preStopSleepSeconds},
			}}
		}
	}
	if hc := app.Spec.HealthCheck; hc != nil {
		container.ReadinessProbe, container.LivenessProbe, container.StartupProbe = probes(app, hc)
	}
	container.VolumeMounts = bindingMounts(app)
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: engine.Labels(Component, app.Name)},
		Spec: corev1.PodSpec{
			Containers:      []corev1.Container{container},
			SecurityContext: appsecurity.Pod(app),
			// The App's pods do not talk to the API server unless the image says so.
			AutomountServiceAccountToken: ptr.To(false),
			Volumes:                      bindingVolumes(r),
		},
	}
	annotations := map[string]string{}
	if app.Spec.Config != "" {
		annotations[mooringv1.ConfigChecksumAnnotation] = checksum(app.Spec.Config)
	}
	if sum := r.envChecksum(); sum != "" {
		annotations[mooringv1.BindingsChecksumAnnotation] = sum
	}
	if len(r.EnvFrom) > 0 {
		annotations[mooringv1.EnvFromChecksumAnnotation] = checksum(strings.Join(r.EnvFrom, "\x00"))
	}
	if len(annotations) > 0 {
		template.Annotations = annotations
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Labels: engine.Labels(Component, app.Name)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(app.Spec.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: template,
		},
	}
	if app.Spec.Autoscaling != nil {
		// The HorizontalPodAutoscaler owns the replica count: leaving the field out of the
		// apply lets its ownership pass (see Handler.Sync for the hand-over).
		d.Spec.Replicas = nil
	}
	if HighlyAvailable(app) {
		spreadAndRollSafely(d)
	}
	return d
}

// env is APP_CONFIG, then the bindings' variables, then the user's, so that the user's
// may refer to the others as $(VAR).
func env(app *mooringv1.App, r Resolved) []corev1.EnvVar {
	var out []corev1.EnvVar
	if app.Spec.Config != "" {
		out = append(out, corev1.EnvVar{Name: ConfigEnvVar, ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(app)},
				Key:                  ConfigKey,
			},
		}})
	}
	out = append(out, bindingEnv(app, r)...)
	return append(out, app.Spec.Env...)
}

// ConfigMap holds spec.config; nil when the App has no config.
func ConfigMap(app *mooringv1.App) *corev1.ConfigMap {
	if app.Spec.Config == "" {
		return nil
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName(app), Labels: engine.Labels(Component, app.Name)},
		Data:       map[string]string{ConfigKey: app.Spec.Config},
	}
}

// Service exposes spec.port inside the cluster; nil when the App has no port.
func Service(app *mooringv1.App) *corev1.Service {
	if app.Spec.Port == nil {
		return nil
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Labels: engine.Labels(Component, app.Name)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: engine.SelectorLabels(Component, app.Name),
			Ports: []corev1.ServicePort{{
				Name: portName, Protocol: corev1.ProtocolTCP,
				Port: *app.Spec.Port, TargetPort: intstr.FromInt32(*app.Spec.Port),
			}},
		},
	}
}

func checksum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
