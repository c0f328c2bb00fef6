package app

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// CertManagerIssuerAnnotation asks cert-manager's ingress-shim for a certificate from a
// ClusterIssuer.
const CertManagerIssuerAnnotation = "cert-manager.io/cluster-issuer"

func exposePath(e *mooringv1.AppExpose) string {
	if e.Path == "" {
		return "/"
	}
	return e.Path
}

// TLSSecretName is the Secret the Ingress serves the certificate from.
func TLSSecretName(app *mooringv1.App) string {
	if t := app.Spec.Expose.TLS; t != nil && t.SecretName != "" {
		return t.SecretName
	}
	return app.Name + "-tls"
}

// Ingress routes spec.expose to the App's Service; nil without spec.expose, or when it
// names a Gateway (then HTTPRoute is used).
func Ingress(app *mooringv1.App) *networkingv1.Ingress {
	e := app.Spec.Expose
	if e == nil || e.Gateway != nil || app.Spec.Port == nil {
		return nil
	}
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Labels: engine.Labels(Component, app.Name)},
		Spec: networkingv1.IngressSpec{
			IngressClassName: e.IngressClassName,
			Rules: []networkingv1.IngressRule{{
				Host: e.Host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     exposePath(e),
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: app.Name, Port: networkingv1.ServiceBackendPort{Number: *app.Spec.Port},
						}},
					}},
				}},
			}},
		},
	}
	if e.TLS != nil {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{e.Host}, SecretName: TLSSecretName(app)}}
		if e.TLS.Issuer != "" {
			ing.Annotations = map[string]string{CertManagerIssuerAnnotation: e.TLS.Issuer}
		}
	}
	return ing
}

// HTTPRoute attaches the App's Service to the Gateway spec.expose.gateway names; nil
// without one. The caller includes it only when the HTTPRoute CRD is served.
func HTTPRoute(app *mooringv1.App) *gatewayv1.HTTPRoute {
	e := app.Spec.Expose
	if e == nil || e.Gateway == nil || app.Spec.Port == nil {
		return nil
	}
	parent := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(e.Gateway.Name)}
	if e.Gateway.Namespace != "" {
		parent.Namespace = ptr.To(gatewayv1.Namespace(e.Gateway.Namespace))
	}
	if e.Gateway.SectionName != "" {
		parent.SectionName = ptr.To(gatewayv1.SectionName(e.Gateway.SectionName))
	}
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Labels: engine.Labels(Component, app.Name)},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
					Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(exposePath(e)),
				}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
					BackendObjectReference: gatewayv1.BackendObjectReference{
						Name: gatewayv1.ObjectName(app.Name), Port: ptr.To(*app.Spec.Port),
					},
				}}},
			}},
		},
	}
	if e.Host != "" {
		route.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(e.Host)}
	}
	return route
}

// URL is where the exposed App answers: its host when it has one, else the Ingress's load
// balancer address once it has one (ing may be nil); "" when not known.
func URL(app *mooringv1.App, ing *networkingv1.Ingress) string {
	e := app.Spec.Expose
	if e == nil {
		return ""
	}
	scheme := "http"
	if e.TLS != nil {
		scheme = "https"
	}
	host := e.Host
	if host == "" && ing != nil {
		for _, lb := range ing.Status.LoadBalancer.Ingress {
			if host = lb.Hostname; host == "" {
				host = lb.IP
			}
			if host != "" {
				break
			}
		}
	}
	if host == "" {
		return ""
	}
	return scheme + "://" + host + exposePath(e)
}
