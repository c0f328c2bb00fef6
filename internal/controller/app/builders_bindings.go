package app

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

const (
	// BindingRootEnvVar tells servicebinding.io client libraries (Spring Cloud Bindings,
	// Quarkus, the spec's own) where the bindings are.
	BindingRootEnvVar = "SERVICE_BINDING_ROOT"
	// BindingRoot is the directory every binding is a subdirectory of.
	BindingRoot = "/bindings"
	// BindingsChecksumAnnotation on the pod template changes when the values behind a
	// binding's environment variables change (a rotated password), which rolls the pods:
	// files follow changes by themselves, variables are read only at start.
	BindingsChecksumAnnotation = "mooring.dev/bindings-checksum"
	// Binding entries the credentials Secret holds.
	usernameKey = "username"
	passwordKey = "password"
)

// Resolved is what an App's children depend on beyond its spec, looked up by the handler:
// the provisioned services its bindings name and whether the HTTPRoute kind is served.
type Resolved struct {
	// Bindings are spec.bindings resolved, in the same order.
	Bindings []ResolvedBinding
	// GatewayAPI is true when the cluster serves Gateway API HTTPRoutes.
	GatewayAPI bool
	// EnvFrom lists the required sources of spec.envFrom with their resourceVersions
	// ("ConfigMap/settings=123"); nil without any.
	EnvFrom []string
}

// ResolvedBinding is one binding with what its provisioned service published.
type ResolvedBinding struct {
	mooringv1.AppBinding
	// ConfigMap holds the non-secret entries (status.binding.name).
	ConfigMap string
	// Keys are the ConfigMap's keys, sorted: each becomes <NAME>_<KEY> with env.
	Keys []string
	// Secret holds username and password (status.binding.secretName); "" when none.
	Secret string
	// Version identifies the values behind the binding without holding any of them: the
	// ConfigMap's data hash and the Secret's resourceVersion. It rolls the pods of an
	// env binding when it changes.
	Version string
}

func volumeName(b mooringv1.AppBinding) string { return "binding-" + b.Name }

// bindingMounts mounts each binding read-only under $SERVICE_BINDING_ROOT/<name>.
func bindingMounts(app *mooringv1.App) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, b := range app.Spec.Bindings {
		out = append(out, corev1.VolumeMount{Name: volumeName(b), MountPath: path.Join(BindingRoot, b.Name), ReadOnly: true})
	}
	return out
}

// bindingVolumes projects each binding's ConfigMap and credentials Secret into one
// directory, so the application sees one file per entry and Mooring copies no secret.
func bindingVolumes(r Resolved) []corev1.Volume {
	var out []corev1.Volume
	for _, b := range r.Bindings {
		sources := []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: b.ConfigMap},
		}}}
		if b.Secret != "" {
			sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: b.Secret},
				Items:                []corev1.KeyToPath{{Key: usernameKey, Path: usernameKey}, {Key: passwordKey, Path: passwordKey}},
			}})
		}
		out = append(out, corev1.Volume{Name: volumeName(b.AppBinding), VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: sources},
		}})
	}
	return out
}

// EnvPrefix is the prefix of a binding's environment variables: its name upper-cased,
// "-" as "_".
func EnvPrefix(bindingName string) string {
	return strings.ToUpper(strings.ReplaceAll(bindingName, "-", "_")) + "_"
}

// bindingEnv is SERVICE_BINDING_ROOT and, for bindings with env, one variable per entry,
// each a reference to the ConfigMap or Secret (never a value).
func bindingEnv(app *mooringv1.App, r Resolved) []corev1.EnvVar {
	if len(app.Spec.Bindings) == 0 {
		return nil
	}
	out := []corev1.EnvVar{{Name: BindingRootEnvVar, Value: BindingRoot}}
	for _, b := range r.Bindings {
		if !b.Env {
			continue
		}
		prefix := EnvPrefix(b.Name)
		for _, k := range b.Keys {
			out = append(out, corev1.EnvVar{Name: prefix + envKey(k), ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: b.ConfigMap}, Key: k},
			}})
		}
		if b.Secret != "" {
			for _, k := range []string{usernameKey, passwordKey} {
				out = append(out, corev1.EnvVar{Name: prefix + envKey(k), ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: b.Secret}, Key: k},
				}})
			}
		}
	}
	return out
}

func envKey(k string) string { return strings.ToUpper(strings.ReplaceAll(k, "-", "_")) }

// envChecksum hashes the versions of the bindings that set environment variables; "" when
// none does.
func (r Resolved) envChecksum() string {
	h := sha256.New()
	found := false
	for _, b := range r.Bindings {
		if b.Env {
			found = true
			h.Write([]byte(b.Name + "\x00" + b.ConfigMap + "\x00" + b.Secret + "\x00" + b.Version + "\x00"))
		}
	}
	if !found {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}
