package webhook

import (
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/bindingenv"
	appcontroller "github.com/mooringhq/mooring/internal/controller/app"
)

// The App field each field of its children comes from, as the builders of
// internal/controller/app set them. A child field the tables do not name is reported at
// the App's spec, with the child's field in the message.

// fieldRule maps a child field, and everything under it, to an App field.
type fieldRule struct {
	child, app string
	// exact: the child's value is the App's, so the rest of the child's path (an index, a
	// key, a subfield) is the App's too. Otherwise the child's value is built from the
	// App field, and the message names the child's field as well.
	exact bool
}

const container = "spec.template.spec.containers[0]"

// childFieldRules are each kind's rules, most specific first; commonFieldRules follow.
var childFieldRules = map[string][]fieldRule{
	"Deployment": {
		{container + ".envFrom", "spec.envFrom", true},
		{container + ".resources", "spec.resources", true},
		{container + ".image", "spec.image", true},
		{container + ".command", "spec.command", true},
		{container + ".args", "spec.args", true},
		{container + ".securityContext", "spec.securityContext", false},
		{container + ".ports", "spec.port", false},
		{container + ".volumeMounts", "spec.bindings", false},
		{"spec.template.spec.volumes", "spec.bindings", false},
		{"spec.template.spec.securityContext", "spec.securityContext", true},
		{"spec.template.spec.topologySpreadConstraints", "spec.highAvailability", false},
		{"spec.strategy", "spec.highAvailability", false},
		{"spec.replicas", "spec.replicas", true},
	},
	"Service":   {{"spec.ports", "spec.port", false}},
	"ConfigMap": {{"data", "spec.config", false}, {"", "spec.config", false}, {"[]", "spec.config", false}},
	"Ingress": {
		{"spec.rules[0].host", "spec.expose.host", true},
		{"spec.rules[0].http.paths[0].path", "spec.expose.path", true},
		{"spec.rules[0].http.paths[0].backend", "spec.port", false},
		{"spec.ingressClassName", "spec.expose.ingressClassName", true},
		{"spec.tls[0].secretName", "spec.expose.tls.secretName", true},
		{"spec.tls[0].hosts", "spec.expose.host", false},
		{"metadata.annotations", "spec.expose.tls.issuer", false},
	},
	"HTTPRoute": {
		{"spec.hostnames[0]", "spec.expose.host", true},
		{"spec.hostnames", "spec.expose.host", false},
		{"spec.rules[0].matches[0].path.value", "spec.expose.path", true},
		{"spec.rules[0].matches", "spec.expose.path", false},
		{"spec.rules[0].backendRefs", "spec.port", false},
		{"spec.parentRefs[0].name", "spec.expose.gateway.name", true},
		{"spec.parentRefs[0].namespace", "spec.expose.gateway.namespace", true},
		{"spec.parentRefs[0].sectionName", "spec.expose.gateway.sectionName", true},
		{"spec.parentRefs", "spec.expose.gateway", false},
	},
	"HorizontalPodAutoscaler": {
		{"spec.minReplicas", "spec.autoscaling.minReplicas", true},
		{"spec.maxReplicas", "spec.autoscaling.maxReplicas", true},
		{"spec.metrics", "spec.autoscaling", false},
		{"spec.behavior", "spec.autoscaling", false},
	},
	"PodDisruptionBudget": {{"spec", "spec.highAvailability", false}},
}

// commonFieldRules: every child's name and labels are made from the App's name.
var commonFieldRules = []fieldRule{
	{"metadata.name", "metadata.name", false},
	{"metadata.generateName", "metadata.name", false},
	{"metadata.labels", "metadata.name", false},
	{"spec.selector", "metadata.name", false},
	{"spec.template.metadata.labels", "metadata.name", false},
}

// probeField matches the container's probes: built from spec.healthCheck, or from spec.port
// without one.
var probeField = regexp.MustCompile(`^` + regexp.QuoteMeta(container) + `\.(readiness|liveness|startup)Probe([.\[]|$)`)

// envField matches one of the container's environment variables.
var envField = regexp.MustCompile(`^` + regexp.QuoteMeta(container) + `\.env\[(\d+)\](.*)$`)

// childFields maps the fields of one child, built from app, to the App's.
type childFields struct {
	app   *mooringv1.App
	kind  string
	child client.Object
}

// appField is the App field a child's field comes from, and whether it is that field
// itself (exact) rather than a value built from it.
func (m childFields) appField(childField string) (path string, exact bool) {
	if sub := envField.FindStringSubmatch(childField); sub != nil && m.kind == "Deployment" {
		return m.envField(sub[1], sub[2])
	}
	if probeField.MatchString(childField) && m.kind == "Deployment" {
		if m.app.Spec.HealthCheck != nil {
			return "spec.healthCheck", false
		}
		return "spec.port", false
	}
	for _, r := range append(append([]fieldRule(nil), childFieldRules[m.kind]...), commonFieldRules...) {
		rest, ok := strings.CutPrefix(childField, r.child)
		if !ok || (rest != "" && r.child != "" && rest[0] != '.' && rest[0] != '[') || (r.child == "" && childField != "") {
			continue
		}
		if r.exact {
			return r.app + rest, true
		}
		return r.app, false
	}
	return "spec", false
}

// envField maps the container's env[index] (and what follows) to the App field that set
// it: spec.env, after the variables the builder puts first (APP_CONFIG for spec.config,
// SERVICE_BINDING_ROOT and each env binding's variables).
func (m childFields) envField(index, rest string) (string, bool) {
	d, ok := m.child.(*appsv1.Deployment)
	i, err := strconv.Atoi(index)
	if !ok || err != nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return "spec.env", false
	}
	built := d.Spec.Template.Spec.Containers[0].Env
	first := len(built) - len(m.app.Spec.Env) // the builder appends spec.env last
	switch {
	case i >= first:
		return "spec.env[" + strconv.Itoa(i-first) + "]" + rest, true
	case i >= len(built):
		return "spec.env", false
	case built[i].Name == appcontroller.ConfigEnvVar:
		return "spec.config", false
	}
	for j, b := range m.app.Spec.Bindings {
		if b.Env && strings.HasPrefix(built[i].Name, bindingenv.Prefix(b.Name)) {
			return "spec.bindings[" + strconv.Itoa(j) + "].name", false
		}
	}
	return "spec.bindings", false
}
