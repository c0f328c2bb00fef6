package main

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// source is a kustomize directory the chart is generated from, and how its objects
// become templates.
type source struct {
	// dir is the kustomize directory under config/.
	dir string
	// namespace is the namespace its objects are rendered into, which becomes target.
	namespace string
	// target is the placeholder namespace becomes; the release namespace's when empty.
	target string
	// skip reports objects the chart does not take from the directory.
	skip func(u *unstructured.Unstructured) bool
	// condition is the template condition an object is rendered under; "" for always.
	condition func(u *unstructured.Unstructured) string
	// extraLabels is the values path of labels added to an object; "" for none.
	extraLabels func(u *unstructured.Unstructured) string
	// edit replaces values of an object with placeholders (see placeholders).
	edit func(u *unstructured.Unstructured) error
}

// The values that switch the optional parts on.
const (
	metricsCondition    = ".Values.metrics.enabled"
	monitorCondition    = "and .Values.metrics.enabled .Values.metrics.serviceMonitor.enabled"
	podMonitorCondition = ".Values.metrics.podMonitor.enabled"
	rulesCondition      = ".Values.metrics.prometheusRule.enabled"
	dashboardsCondition = ".Values.metrics.dashboards.enabled"
	portalCondition     = ".Values.portal.enabled"
	// The portal's own namespace is the chart's to create only when it is not the
	// release's, which helm creates or the user made.
	portalNSCondition = "and .Values.portal.enabled .Values.portal.namespace (ne .Values.portal.namespace .Release.Namespace)"
	// The portal's PodDisruptionBudget, as the operator's: only while a replica may go.
	portalPDBCondition = "and .Values.portal.enabled .Values.portal.podDisruptionBudget.enabled (gt (int .Values.portal.replicas) 1)"
)

// sources are everything the chart installs but the operator's Deployment and PDB.
var sources = []source{
	{
		// What `kubectl apply -k config/default` installs; the Namespace is helm's
		// --namespace, the Deployment and PDB are hand-written templates shaped by values.
		dir: "config/default", namespace: "mooring-system",
		skip: kinds("Namespace", "Deployment", "PodDisruptionBudget"),
	},
	{
		// The metrics Service, ServiceMonitor, metrics-reader ClusterRole (whenever metrics
		// are served), the alerts, and the databases' PodMonitor (the instance managers
		// serve their metrics whatever the operator's metrics.enabled says).
		dir: "config/prometheus", namespace: "mooring-system",
		condition: func(u *unstructured.Unstructured) string {
			switch u.GetKind() {
			case "PrometheusRule":
				return rulesCondition
			case "ClusterRole":
				// Whoever scrapes the metrics needs it, with or without a ServiceMonitor.
				return metricsCondition
			case "PodMonitor":
				return podMonitorCondition
			}
			return monitorCondition
		},
		extraLabels: func(u *unstructured.Unstructured) string {
			switch u.GetKind() {
			case "PrometheusRule":
				return ".Values.metrics.prometheusRule.labels"
			case "ServiceMonitor":
				return ".Values.metrics.serviceMonitor.labels"
			case "PodMonitor":
				return ".Values.metrics.podMonitor.labels"
			}
			return ""
		},
		edit: func(u *unstructured.Unstructured) error {
			switch u.GetKind() {
			case "ServiceMonitor":
				return setEach(u, intervalPlaceholder, "spec", "endpoints", "interval")
			case "PodMonitor":
				return setEach(u, podMonitorIntervalPlaceholder, "spec", "podMetricsEndpoints", "interval")
			}
			return nil
		},
	},
	{
		// The Grafana dashboards, as ConfigMaps for the Grafana sidecar.
		dir: "config/grafana", namespace: "mooring-system",
		condition:   func(*unstructured.Unstructured) string { return dashboardsCondition },
		extraLabels: func(*unstructured.Unstructured) string { return ".Values.metrics.dashboards.labels" },
		edit: func(u *unstructured.Unstructured) error {
			u.SetNamespace(dashboardsNSPlaceholder)
			return nil
		},
	},
	{
		// The portal runs in portal.namespace (the release namespace when empty); its
		// users' namespace is its own.
		dir: "config/portal", namespace: "mooring-portal", target: portalNSPlaceholder,
		condition: func(u *unstructured.Unstructured) string {
			if isPortalNamespace(u) {
				return portalNSCondition
			}
			if u.GetKind() == "PodDisruptionBudget" {
				return portalPDBCondition
			}
			return portalCondition
		},
		edit: func(u *unstructured.Unstructured) error {
			if isPortalNamespace(u) {
				// Kept on uninstall: it holds the users' password hashes and the signing
				// keys, which the portal made and nobody could make again.
				u.SetName(portalNSPlaceholder)
				a := u.GetAnnotations()
				if a == nil {
					a = map[string]string{}
				}
				a["helm.sh/resource-policy"] = "keep"
				u.SetAnnotations(a)
				return nil
			}
			if u.GetKind() == "ValidatingAdmissionPolicy" {
				return setVariable(u, "protectedNamespaces", protectedNSPlaceholder)
			}
			if u.GetKind() != "Deployment" {
				return nil
			}
			if err := unstructured.SetNestedField(u.Object, portalReplicasPlaceholder, "spec", "replicas"); err != nil {
				return err
			}
			// config/portal's resources become the default of portal.resources (values.yaml);
			// the drift test renders the defaults and compares them with config/portal.
			if err := setEach(u, portalResourcesPlaceholder, "spec", "template", "spec", "containers", "resources"); err != nil {
				return err
			}
			if err := unstructured.SetNestedField(u.Object, placeholderValue, "spec", "template", "spec", portalSchedulingKey); err != nil {
				return err
			}
			containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			if err != nil {
				return fmt.Errorf("read the portal's containers: %w", err)
			}
			if len(containers) != 1 {
				return fmt.Errorf("want one portal container, have %d", len(containers))
			}
			c := containers[0].(map[string]any)
			args, _, _ := unstructured.NestedStringSlice(c, "args")
			// The operator runs in the release namespace, config/default's in mooring-system.
			i := slices.Index(args, operatorNSArg+namespace)
			if i < 0 {
				return fmt.Errorf("the portal's args %q have no %s%s to make the release namespace", args, operatorNSArg, namespace)
			}
			args[i] = operatorNSArg + nsPlaceholder
			if err := unstructured.SetNestedStringSlice(c, append(args, portalArgsPlaceholder), "args"); err != nil {
				return err
			}
			// Placeholder items for the single sign-on client secret's mount and volume.
			mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
			if err := unstructured.SetNestedSlice(c, append(mounts, portalSSOMountPlaceholder), "volumeMounts"); err != nil {
				return err
			}
			volumes, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "volumes")
			if err := unstructured.SetNestedSlice(u.Object, append(volumes, portalSSOVolumePlaceholder), "spec", "template", "spec", "volumes"); err != nil {
				return err
			}
			if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
				return err
			}
			return setEach(u, portalImagePlaceholder, "spec", "template", "spec", "containers", "image")
		},
	},
}

// operatorNSArg is the portal's flag naming the operator's namespace, which it protects.
const operatorNSArg = "--operator-namespace="

// isPortalNamespace reports config/portal's own Namespace (not its users'), before or
// after edit names it with the placeholder.
func isPortalNamespace(u *unstructured.Unstructured) bool {
	return u.GetKind() == "Namespace" && (u.GetName() == "mooring-portal" || u.GetName() == portalNSPlaceholder)
}

// kinds reports objects of the given kinds.
func kinds(names ...string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		for _, n := range names {
			if u.GetKind() == n {
				return true
			}
		}
		return false
	}
}

// setEach sets field of every element of the list at path to value.
func setEach(u *unstructured.Unstructured, value string, path ...string) error {
	list, _, err := unstructured.NestedSlice(u.Object, path[:len(path)-1]...)
	if err != nil {
		return err
	}
	for _, e := range list {
		e.(map[string]any)[path[len(path)-1]] = value
	}
	return unstructured.SetNestedSlice(u.Object, list, path[:len(path)-1]...)
}

// setVariable sets the expression of the policy variable named name to value; an
// error when the policy has no such variable, so a renamed one cannot go unnoticed.
func setVariable(u *unstructured.Unstructured, name, value string) error {
	vars, _, err := unstructured.NestedSlice(u.Object, "spec", "variables")
	if err != nil {
		return err
	}
	for _, v := range vars {
		if m, ok := v.(map[string]any); ok && m["name"] == name {
			m["expression"] = value
			return unstructured.SetNestedSlice(u.Object, vars, "spec", "variables")
		}
	}
	return fmt.Errorf("%s %s has no variable %s", u.GetKind(), u.GetName(), name)
}
