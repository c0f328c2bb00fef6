package webhook

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/bindingenv"
	appcontroller "github.com/mooringhq/mooring/internal/controller/app"
)

// An App is refused at admission when a child it makes would be refused when Mooring
// applies it. The children are the App controller's own (internal/controller/app's
// Children, the pure builders the controller applies), each created in the App's
// namespace with a server-side dry run: the API server validates them exactly as it will
// when the controller applies them (its built-in validation, the Gateway API's CRD
// schema and CEL rules), and stores nothing. Each error the server finds in a child's
// field is reported at the App field it came from (the Deployment's
// spec.template.spec.containers[0].env[2].name is the App's spec.env[2].name).
//
// The dry runs are creates under a generated name, so that they do not meet the App's
// live children (an update would be refused as AlreadyExists, and its result would mix
// in what the live child keeps). An answer other than "invalid" (a namespace being
// deleted, a quota, another webhook that does not take dry runs, an unreachable server)
// says nothing about the App, so it does not refuse it: the controller reports what the
// real apply meets.

// The App controller's role creates these kinds; the dry runs need no more.
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=create
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=create
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=create
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=create
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=create
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=create

// Creator creates objects: the manager's client, which sends a dry run straight to the
// API server.
type Creator interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

// Placeholder names of a binding's ConfigMap and Secret in the children built for the dry
// run: the real ones are the bound service's status, which the names of the App's own
// fields do not depend on.
const (
	dryRunBindingConfigMap = "binding"
	dryRunBindingSecret    = "credentials"
)

// dryRunTimeout bounds the dry runs of one App's children. A slow API server then leaves
// the children unchecked (the controller reports what applying them meets) rather than
// the admission request timing out (10 s, twice this and the rest of the checks on an
// update that ratchets), which would refuse the App without saying why.
const dryRunTimeout = 3 * time.Second

// dryRunResolved is what the children depend on beyond the spec, as the App controller
// will resolve it once the bound services are provisioned: every binding with the entries
// its kind publishes (so that the Deployment carries the binding variables the builder
// adds), and the HTTPRoute kind served.
func dryRunResolved(app *mooringv1.App) appcontroller.Resolved {
	r := appcontroller.Resolved{GatewayAPI: true}
	for _, b := range app.Spec.Bindings {
		rb := appcontroller.ResolvedBinding{AppBinding: b, ConfigMap: dryRunBindingConfigMap, Keys: bindingenv.ConfigMapKeys(b.Ref.Kind)}
		if len(bindingenv.SecretKeys(b.Ref.Kind)) > 0 {
			rb.Secret = dryRunBindingSecret
		}
		r.Bindings = append(r.Bindings, rb)
	}
	return r
}

// childErrors are the App's fields that a child built from it would be refused for, found
// by creating each child with a dry run through c (concurrently: each is one round trip).
// A child kind the cluster does not serve (the Gateway API's HTTPRoute) is checked by
// gatewayErrors instead.
func childErrors(ctx context.Context, c Creator, app *mooringv1.App) field.ErrorList {
	ctx, cancel := context.WithTimeout(ctx, dryRunTimeout)
	defer cancel()
	children := appcontroller.Children(app, dryRunResolved(app))
	results := make([]field.ErrorList, len(children))
	var wg sync.WaitGroup
	for i, child := range children {
		wg.Go(func() { results[i] = dryRunChild(ctx, c, app, child) })
	}
	wg.Wait()
	// Two children built from one field (the Ingress's rule host and TLS host) say the same.
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, r := range results {
		for _, e := range r {
			if !seen[e.Error()] {
				seen[e.Error()] = true
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// dryRunChild creates child with a dry run under a name generated from its own, and
// returns the App fields the API server refuses it for.
func dryRunChild(ctx context.Context, c Creator, app *mooringv1.App, child client.Object) field.ErrorList {
	kind := childKind(child)
	obj := child.DeepCopyObject().(client.Object)
	obj.SetNamespace(app.Namespace)
	obj.SetGenerateName(obj.GetName() + "-")
	obj.SetName("")
	err := c.Create(ctx, obj, client.DryRunAll)
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		if kind == "HTTPRoute" {
			return gatewayErrors(app.Spec.Expose)
		}
		return nil
	case !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil:
		ctrl.Log.WithName("app-webhook").V(1).Info("Could not check a child of the App with a dry run; the controller will report what applying it meets",
			"app", client.ObjectKeyFromObject(app), "kind", kind, "error", err.Error())
		return nil
	}
	m := childFields{app: app, kind: kind, child: child}
	var errs field.ErrorList
	for _, cause := range status.Status().Details.Causes {
		errs = append(errs, m.appError(cause.Field, string(cause.Type), cause.Message))
	}
	if len(errs) == 0 { // refused without saying which field
		errs = append(errs, field.Invalid(field.NewPath("spec"), field.OmitValueType{},
			fmt.Sprintf("the %s built from the App would be refused: %s", kind, status.Status().Message)))
	}
	return errs
}

// childKind is the kind of a child built by the App's builders, which leave TypeMeta
// empty: its Go type's name (Deployment, HTTPRoute).
func childKind(obj client.Object) string { return reflect.TypeOf(obj).Elem().Name() }

// appError turns one field error of a child into the same error at the App's field. The
// message is the API server's, after the field; when the App field is not the child's
// field by another name (a probe built from spec.healthCheck), the child's field follows
// in parentheses.
func (m childFields) appError(childField, causeType, message string) *field.Error {
	appPath, exact := m.appField(childField)
	t := field.ErrorType(causeType)
	detail := message
	if prefix := t.String() + ": "; strings.HasPrefix(message, prefix) {
		detail = strings.TrimPrefix(message, prefix)
	} else if message == t.String() {
		detail = ""
	} else {
		t = field.ErrorTypeInvalid // an unknown type would print as an internal error
	}
	notes := []string{detail}
	if hint := fieldHint(appPath); hint != "" {
		notes = append(notes, "("+hint+")")
	}
	if !exact {
		where := fmt.Sprintf("the %s built from the App", m.kind)
		if childField != "" && childField != "[]" {
			where = fmt.Sprintf("the %s's %s", m.kind, childField)
		}
		notes = append(notes, "("+where+")")
	}
	detail = strings.TrimSpace(strings.Join(notes, " "))
	return &field.Error{Type: t, Field: appPath, BadValue: field.OmitValueType{}, Detail: detail}
}

// fieldHints say what an App field names, where the API server's message says only what
// form the name must have ("a lowercase RFC 1123 subdomain must consist of ...").
var fieldHints = []struct{ suffix, hint string }{
	{"secretRef.name", "must be the name of a Secret in the App's namespace"},
	{"secretKeyRef.name", "must be the name of a Secret in the App's namespace"},
	{"tls.secretName", "must be the name of a Secret in the App's namespace"},
	{"configMapRef.name", "must be the name of a ConfigMap in the App's namespace"},
	{"configMapKeyRef.name", "must be the name of a ConfigMap in the App's namespace"},
	{"secretKeyRef.key", "must be a Secret key"},
	{"configMapKeyRef.key", "must be a ConfigMap key"},
	{"expose.ingressClassName", "must be the name of an IngressClass"},
}

func fieldHint(appPath string) string {
	for _, h := range fieldHints {
		if strings.HasSuffix(appPath, h.suffix) {
			return h.hint
		}
	}
	return ""
}
