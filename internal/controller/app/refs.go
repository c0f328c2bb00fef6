package app

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

// Refs lists what the App references by "<Kind>/<name>", the values of the RefsField index.
func Refs(app *mooringv1.App) []string {
	var out []string
	for _, e := range app.Spec.EnvFrom {
		switch {
		case e.ConfigMapRef != nil:
			out = append(out, "ConfigMap/"+e.ConfigMapRef.Name)
		case e.SecretRef != nil:
			out = append(out, "Secret/"+e.SecretRef.Name)
		}
	}
	for _, b := range app.Spec.Bindings {
		out = append(out, b.Ref.Kind+"/"+b.Ref.Name)
		// The credentials Secret of a database is not known from the spec; its changes
		// reach the App through the Secret watch, which maps a Secret to the Apps bound to
		// the databases using it.
	}
	return out
}

func metadataOf(kind string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}

// checkEnvFrom reports whether every required ConfigMap and Secret of spec.envFrom exists
// (metadata only: Mooring never reads their data), and sets EnvFromReady. versions lists
// each required source with its resourceVersion ("ConfigMap/settings=123"), in spec
// order: the pod template carries their hash, so a changed source rolls the pods, which
// read environment variables only at start. Optional sources are left out: they are not
// looked up, and may come and go without the App depending on them.
func (h Handler) checkEnvFrom(ctx context.Context, s *engine.Scope[*mooringv1.App]) (ready bool, versions []string, err error) {
	app := s.Object
	if len(app.Spec.EnvFrom) == 0 {
		meta.RemoveStatusCondition(app.StatusConditions(), mooringv1.ConditionEnvFromReady)
		return true, nil, nil
	}
	var missing []string
	for _, e := range app.Spec.EnvFrom {
		var kind, name string
		var reader client.Reader
		switch {
		case e.ConfigMapRef != nil && !ptr.Deref(e.ConfigMapRef.Optional, false):
			kind, name, reader = "ConfigMap", e.ConfigMapRef.Name, h.References
			if err := s.StartWatch(configMapsWatch); err != nil {
				return false, nil, err
			}
		case e.SecretRef != nil && !ptr.Deref(e.SecretRef.Optional, false):
			kind, name, reader = "Secret", e.SecretRef.Name, s.Client
		default:
			continue
		}
		obj := metadataOf(kind)
		err := reader.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, kind+" "+name)
		case err != nil:
			return false, nil, fmt.Errorf("get %s %s: %w", kind, name, err)
		default:
			versions = append(versions, kind+"/"+name+"="+obj.ResourceVersion)
		}
	}
	if len(missing) > 0 {
		msg := "Waiting for " + strings.Join(missing, ", ") + " named in spec.envFrom; the App proceeds once it exists."
		if !engine.HasCondition(app, mooringv1.ConditionEnvFromReady, metav1.ConditionFalse, mooringv1.ReasonEnvFromMissing) {
			s.Event(corev1.EventTypeWarning, mooringv1.ReasonEnvFromMissing, "Reconcile", msg)
		}
		engine.SetCondition(app, mooringv1.ConditionEnvFromReady, metav1.ConditionFalse, mooringv1.ReasonEnvFromMissing, msg)
		return false, nil, nil
	}
	engine.SetCondition(app, mooringv1.ConditionEnvFromReady, metav1.ConditionTrue, mooringv1.ReasonEnvFromFound, "Every ConfigMap and Secret in spec.envFrom exists.")
	return true, versions, nil
}

// resolveBindings looks up the provisioned service of every binding and sets
// BindingsReady; names only, never a secret value, reach status and events. It returns
// the resolved bindings and false while one must still be waited for: its service or the
// binding's ConfigMap or Secret does not exist, or (the first time only, live being the
// App's Deployment, nil when none) the service is not Running yet. A service that stops
// being Running later only makes BindingsReady False: its ConfigMap and Secret still
// exist, and holding the App back would stop its image changes and rollbacks too.
func (h Handler) resolveBindings(ctx context.Context, s *engine.Scope[*mooringv1.App], live *appsv1.Deployment) ([]ResolvedBinding, bool, error) {
	app := s.Object
	if len(app.Spec.Bindings) == 0 {
		meta.RemoveStatusCondition(app.StatusConditions(), mooringv1.ConditionBindingsReady)
		return nil, true, nil
	}
	var out []ResolvedBinding
	var waiting, degraded []string
	reason := mooringv1.ReasonBindingNotRunning
	for _, b := range app.Spec.Bindings {
		rb, wait, notRunning, err := resolveBinding(ctx, s.Client, app.Namespace, b, live)
		if err != nil {
			return nil, false, err
		}
		if wait != "" {
			waiting = append(waiting, fmt.Sprintf("binding %s: %s", b.Name, wait))
			if strings.Contains(wait, "does not exist") {
				reason = mooringv1.ReasonBindingNotFound
			}
			continue
		}
		if notRunning != "" {
			degraded = append(degraded, fmt.Sprintf("binding %s: %s", b.Name, notRunning))
		}
		out = append(out, rb)
	}
	var msg string
	switch {
	case len(waiting) > 0:
		msg = "Waiting for " + strings.Join(waiting, "; ") + "."
	case len(degraded) > 0:
		reason = mooringv1.ReasonBindingDegraded
		msg = "Not Running: " + strings.Join(degraded, "; ") + ". The pods keep the binding and changes to the App are still applied."
	default:
		engine.SetCondition(app, mooringv1.ConditionBindingsReady, metav1.ConditionTrue, mooringv1.ReasonBindingsReady, "Every service in spec.bindings is Running.")
		return out, true, nil
	}
	if !engine.HasCondition(app, mooringv1.ConditionBindingsReady, metav1.ConditionFalse, reason) {
		s.Event(corev1.EventTypeWarning, reason, "Reconcile", msg)
	}
	engine.SetCondition(app, mooringv1.ConditionBindingsReady, metav1.ConditionFalse, reason, msg)
	if len(waiting) > 0 {
		return nil, false, nil
	}
	return out, true, nil
}

// provisioned reads the phase and status.binding of the service a binding names, and the
// revision of the credentials the service has (empty when it publishes none).
func provisioned(ctx context.Context, c client.Reader, key client.ObjectKey, kind string) (phase string, status *v1beta1.ServiceBindingStatus, credentials string, err error) {
	switch kind {
	case mooringv1.BindingKindDatabaseCluster:
		db := &v1beta1.DatabaseCluster{}
		if err := c.Get(ctx, key, db); err != nil {
			return "", nil, "", err
		}
		if cr := db.Status.Credentials; cr != nil {
			credentials = "credentials-" + strconv.FormatInt(cr.Revision, 10)
		}
		return string(db.Status.Phase), db.Status.Binding, credentials, nil
	case mooringv1.BindingKindCacheInstance:
		ci := &mooringv1.CacheInstance{}
		if err := c.Get(ctx, key, ci); err != nil {
			return "", nil, "", err
		}
		if b := ci.Status.Binding; b != nil {
			status = &v1beta1.ServiceBindingStatus{Name: b.Name, SecretName: b.SecretName}
		}
		return string(ci.Status.Phase), status, "", nil
	}
	return "", nil, "", fmt.Errorf("unknown kind %q", kind)
}

// resolveBinding returns the binding resolved, or why it must wait (wait). A binding the
// live Deployment already projects resolves while its service is not Running too; why it
// is not is in notRunning then.
func resolveBinding(ctx context.Context, c client.Reader, ns string, b mooringv1.AppBinding, live *appsv1.Deployment) (rb ResolvedBinding, wait, notRunning string, err error) {
	phase, status, credentials, err := provisioned(ctx, c, client.ObjectKey{Namespace: ns, Name: b.Ref.Name}, b.Ref.Kind)
	if apierrors.IsNotFound(err) {
		return ResolvedBinding{}, fmt.Sprintf("%s %s does not exist", b.Ref.Kind, b.Ref.Name), "", nil
	}
	if err != nil {
		return ResolvedBinding{}, "", "", fmt.Errorf("get %s %s: %w", b.Ref.Kind, b.Ref.Name, err)
	}
	if phase != "Running" {
		if phase == "" {
			phase = "not yet reconciled"
		}
		notRunning = fmt.Sprintf("%s %s is %s, not Running", b.Ref.Kind, b.Ref.Name, phase)
	}
	switch {
	case status == nil && notRunning != "":
		return ResolvedBinding{}, notRunning, "", nil
	case status == nil:
		return ResolvedBinding{}, fmt.Sprintf("%s %s has not published status.binding", b.Ref.Kind, b.Ref.Name), "", nil
	case notRunning != "" && !projected(live, b, status.Name):
		// The first rollout with a binding waits until its service runs: pods that start
		// before their database accepts connections would only crash-loop into a backoff
		// that outlasts the database's start.
		return ResolvedBinding{}, notRunning, "", nil
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: status.Name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return ResolvedBinding{}, fmt.Sprintf("ConfigMap %s of %s %s does not exist yet", status.Name, b.Ref.Kind, b.Ref.Name), "", nil
		}
		return ResolvedBinding{}, "", "", fmt.Errorf("get ConfigMap %s: %w", status.Name, err)
	}
	rb = ResolvedBinding{AppBinding: b, ConfigMap: status.Name, Secret: status.SecretName}
	for k := range cm.Data {
		rb.Keys = append(rb.Keys, k)
	}
	sort.Strings(rb.Keys)
	// The entries are not secret: their hash may go on the pod template.
	version := []string{dataHash(cm.Data, rb.Keys)}
	if rb.Secret != "" {
		secret := metadataOf("Secret")
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rb.Secret}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return ResolvedBinding{}, fmt.Sprintf("Secret %s of %s %s does not exist", rb.Secret, b.Ref.Kind, b.Ref.Name), "", nil
			}
			return ResolvedBinding{}, "", "", fmt.Errorf("get Secret %s: %w", rb.Secret, err)
		}
		// A DatabaseCluster publishes a credentials revision that advances only once the
		// database itself has the Secret's new password: the pods roll onto it then, not
		// when the Secret is written. Otherwise (a CacheInstance, or a cluster that has not
		// published one yet) the Secret's resourceVersion, which changes with every write,
		// rolls them; either way without Mooring reading, hashing or caching the password.
		if credentials != "" {
			version = append(version, credentials)
		} else {
			version = append(version, secret.ResourceVersion)
		}
	}
	rb.Version = strings.Join(version, "/")
	return rb, "", notRunning, nil
}

// projected reports whether the Deployment d (nil when none) projects binding b from
// ConfigMap cm: the binding resolved before.
func projected(d *appsv1.Deployment, b mooringv1.AppBinding, cm string) bool {
	if d == nil {
		return false
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name != volumeName(b) || v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil && src.ConfigMap.Name == cm {
				return true
			}
		}
	}
	return false
}

func dataHash(data map[string]string, sortedKeys []string) string {
	var b strings.Builder
	for _, k := range sortedKeys {
		b.WriteString(k + "\x00" + data[k] + "\x00")
	}
	return checksum(b.String())
}
