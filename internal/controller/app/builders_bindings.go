package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/bindingenv"
)

const (
	// BindingRootEnvVar tells servicebinding.io client libraries (Spring Cloud Bindings,
	// Quarkus, the spec's own) where the bindings are.
	BindingRootEnvVar = "SERVICE_BINDING_ROOT"
	// BindingRoot is the directory every binding is a subdirectory of.
	BindingRoot = "/bindings"
	// Binding entries the credentials Secret holds.
	usernameKey = bindingenv.UsernameKey
	passwordKey = bindingenv.PasswordKey
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
func EnvPrefix(bindingName string) string { return bindingenv.Prefix(bindingName) }

// bindingEnv is SERVICE_BINDING_ROOT and, for bindings with env, one variable per entry,
// each a reference to the ConfigMap or Secret (never a value). A variable spec.env also
// sets is left out: the App's own value wins (the webhook refuses new Apps that set
// both, but one admitted before it did must still build a valid Deployment);
// ShadowedBindingEnv names them.
func bindingEnv(app *mooringv1.App, r Resolved) []corev1.EnvVar {
	if len(app.Spec.Bindings) == 0 {
		return nil
	}
	own := specEnvNames(app)
	out := []corev1.EnvVar{{Name: BindingRootEnvVar, Value: BindingRoot}}
	add := func(v corev1.EnvVar) {
		if !own[v.Name] {
			out = append(out, v)
		}
	}
	for _, b := range r.Bindings {
		if !b.Env {
			continue
		}
		for _, k := range b.Keys {
			add(corev1.EnvVar{Name: bindingenv.Name(b.Name, k), ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: b.ConfigMap}, Key: k},
			}})
		}
		if b.Secret != "" {
			for _, k := range []string{usernameKey, passwordKey} {
				add(corev1.EnvVar{Name: bindingenv.Name(b.Name, k), ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: b.Secret}, Key: k},
				}})
			}
		}
	}
	return out
}

func specEnvNames(app *mooringv1.App) map[string]bool {
	own := map[string]bool{}
	for _, e := range app.Spec.Env {
		own[e.Name] = true
	}
	return own
}

// ShadowedBindingEnv are the variables of env bindings that spec.env sets too, as
// "<VARIABLE> (spec.bindings[<i>] <name>)", in order; the pods get spec.env's value.
func ShadowedBindingEnv(app *mooringv1.App, r Resolved) []string {
	own := specEnvNames(app)
	var out []string
	for i, b := range r.Bindings {
		if !b.Env {
			continue
		}
		keys := append([]string(nil), b.Keys...)
		if b.Secret != "" {
			keys = append(keys, usernameKey, passwordKey)
		}
		for _, k := range keys {
			if n := bindingenv.Name(b.Name, k); own[n] {
				out = append(out, fmt.Sprintf("%s (spec.bindings[%d] %s)", n, i, b.Name))
			}
		}
	}
	return out
}

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
