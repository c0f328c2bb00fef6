package app

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// startupAllowanceSeconds is how long a pod may take to start before the liveness probe
// starts counting: the startup probe tries for this long (at the health check's period)
// before the kubelet gives up and restarts the container.
const startupAllowanceSeconds = 300

// probes turns spec.healthCheck into HTTP readiness, liveness and startup probes. The
// startup probe holds the other two off until the App first answers, so a slow start is
// not mistaken for a hang and initialDelaySeconds is only a floor.
func probes(app *mooringv1.App, hc *mooringv1.AppHealthCheck) (readiness, liveness, startup *corev1.Probe) {
	port := intstr.FromString(portName)
	if hc.Port != nil && (app.Spec.Port == nil || *hc.Port != *app.Spec.Port) {
		port = intstr.FromInt32(*hc.Port)
	}
	path := hc.Path
	if path == "" {
		path = "/"
	}
	period := ptr.Deref(hc.PeriodSeconds, 10)
	failures := ptr.Deref(hc.FailureThreshold, 3)
	get := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port, Scheme: corev1.URISchemeHTTP}}
	readiness = &corev1.Probe{ProbeHandler: get, PeriodSeconds: period, FailureThreshold: failures}
	liveness = &corev1.Probe{ProbeHandler: get, PeriodSeconds: period, FailureThreshold: failures}
	startup = &corev1.Probe{
		ProbeHandler:        get,
		InitialDelaySeconds: ptr.Deref(hc.InitialDelaySeconds, 0),
		PeriodSeconds:       period,
		FailureThreshold:    max(failures, (startupAllowanceSeconds+period-1)/period),
	}
	return readiness, liveness, startup
}
