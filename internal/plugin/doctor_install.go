package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The names of what Mooring installs (internal/webhook/certs.go and config/default; a
// test keeps them equal).
const (
	MutatingConfigName   = "mooring-mutating-webhook-configuration"
	ValidatingConfigName = "mooring-validating-webhook-configuration"
	ConversionCRDName    = "databaseclusters.mooring.dev"
)

// expectedCRD is what this plugin was built for: the versions each CRD serves and stores.
type expectedCRD struct {
	name    string
	served  []string
	storage string
}

// expectedCRDs are api/v1's Kinds, as CRDs.
var expectedCRDs = func() []expectedCRD {
	var out []expectedCRD
	for _, k := range mooringv1.Kinds() {
		out = append(out, expectedCRD{name: k.GroupVersionResource().GroupResource().String(), served: k.Versions, storage: k.Version})
	}
	return out
}()

const fixInstallCRDs = "install the CRDs of this release: kubectl apply -k config/default (or config/crd)"

// checkCRDs checks every CRD is there and established, serves and stores the versions this
// plugin knows, and holds no objects in a version it no longer serves.
func checkCRDs(ctx context.Context, env *doctorEnv) []Finding {
	var out []Finding
	for _, want := range expectedCRDs {
		name := "crd " + want.name
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.c.Get(ctx, client.ObjectKey{Name: want.name}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				out = append(out, fail(name, fixInstallCRDs, "missing"))
			} else {
				out = append(out, fail(name, "", "cannot read it: %v", err))
			}
			continue
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		var served []string
		storage := ""
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
			if v.Storage {
				storage = v.Name
			}
		}
		stored := crd.Status.StoredVersions
		summary := fmt.Sprintf("served %s, storage %s, stored %s", strings.Join(served, ","), storage, strings.Join(stored, ","))
		var orphaned []string
		for _, s := range stored {
			if !slices.Contains(served, s) {
				orphaned = append(orphaned, s)
			}
		}
		switch {
		case !established:
			out = append(out, fail(name, "kubectl describe crd "+want.name, "not established: %s", summary))
		case !slices.Equal(served, want.served) || storage != want.storage:
			out = append(out, fail(name, fixInstallCRDs+"; or use the plugin of the installed release",
				"%s; this plugin expects served %s, storage %s", summary, strings.Join(want.served, ","), want.storage))
		case len(orphaned) > 0:
			out = append(out, fail(name, "rewrite every object in "+storage+" (kubectl get "+want.name+" -A -o yaml | kubectl replace -f -), then remove "+
				strings.Join(orphaned, ",")+" from the CRD's status.storedVersions",
				"%s: objects may be stored in %s, which is no longer served", summary, strings.Join(orphaned, ",")))
		case len(stored) > 1:
			out = append(out, warn(name, "rewrite every object in "+storage+", then set status.storedVersions to ["+storage+"]",
				"%s: some objects may still be stored in an older version", summary))
		default:
			out = append(out, pass(name, "established; %s", summary))
		}
	}
	return out
}

// endpoint is a server the API server sends webhook calls to: a Service, or a URL's
// scheme and host (paths differ per webhook, the server and its certificate do not).
type endpoint struct {
	url      string // set for a URL client config: https://host:port
	service  *admissionv1.ServiceReference
	caBundle []byte
	// webhooks is how many webhooks of the configuration call it.
	webhooks int
}

// host is the name the serving certificate must carry for this endpoint.
func (e endpoint) host() string {
	if e.service != nil {
		return e.service.Name + "." + e.service.Namespace + ".svc"
	}
	u, err := url.Parse(e.url)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

func (e endpoint) String() string {
	if e.service != nil {
		return fmt.Sprintf("Service %s/%s:%d", e.service.Namespace, e.service.Name, ptr.Deref(e.service.Port, 443))
	}
	return e.url
}

// calls says how many webhooks call the endpoint, for messages.
func (e endpoint) calls() string {
	if e.webhooks == 1 {
		return "1 webhook at " + e.String()
	}
	return fmt.Sprintf("%d webhooks at %s", e.webhooks, e)
}

// servingCert is the webhook's serving certificate and where it was found.
type servingCert struct {
	cert   *x509.Certificate
	source string
}

// checkWebhooks checks the two webhook configurations and the conversion webhook: each
// has a CA bundle, its endpoint is there (a Service with ready endpoints, or a URL that
// answers), and the CA bundle verifies the certificate served there.
func checkWebhooks(ctx context.Context, env *doctorEnv) []Finding {
	type config struct {
		check     string
		endpoints []endpoint
		err       error
	}
	var configs []config

	mut := &admissionv1.MutatingWebhookConfiguration{}
	mc := config{check: "webhook " + MutatingConfigName}
	if mc.err = env.c.Get(ctx, client.ObjectKey{Name: MutatingConfigName}, mut); mc.err == nil {
		for _, h := range mut.Webhooks {
			mc.endpoints = appendEndpoint(mc.endpoints, h.ClientConfig)
		}
	}
	val := &admissionv1.ValidatingWebhookConfiguration{}
	vc := config{check: "webhook " + ValidatingConfigName}
	if vc.err = env.c.Get(ctx, client.ObjectKey{Name: ValidatingConfigName}, val); vc.err == nil {
		for _, h := range val.Webhooks {
			vc.endpoints = appendEndpoint(vc.endpoints, h.ClientConfig)
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	cc := config{check: "webhook conversion " + ConversionCRDName}
	if cc.err = env.c.Get(ctx, client.ObjectKey{Name: ConversionCRDName}, crd); cc.err == nil {
		cv := crd.Spec.Conversion
		if cv == nil || cv.Strategy != apiextensionsv1.WebhookConverter || cv.Webhook == nil || cv.Webhook.ClientConfig == nil {
			cc.err = errors.New("the CRD has no conversion webhook: v1alpha1 objects cannot be converted")
		} else {
			cc.endpoints = appendEndpoint(cc.endpoints, fromCRDClientConfig(cv.Webhook.ClientConfig))
		}
	}
	configs = append(configs, mc, vc, cc)

	var out []Finding
	for _, cfg := range configs {
		switch {
		case apierrors.IsNotFound(cfg.err):
			out = append(out, fail(cfg.check, "kubectl apply -k config/default", "missing"))
			continue
		case cfg.err != nil:
			out = append(out, fail(cfg.check, "kubectl apply -k config/default", "%v", cfg.err))
			continue
		}
		for _, e := range cfg.endpoints {
			out = append(out, env.checkEndpoint(ctx, cfg.check, e))
		}
	}
	return out
}

func appendEndpoint(list []endpoint, cc admissionv1.WebhookClientConfig) []endpoint {
	e := endpoint{service: cc.Service, caBundle: cc.CABundle, webhooks: 1}
	if raw := ptr.Deref(cc.URL, ""); raw != "" {
		e.url = raw
		if u, err := url.Parse(raw); err == nil {
			e.url = u.Scheme + "://" + u.Host
		}
	}
	for i, have := range list {
		if have.String() == e.String() && string(have.caBundle) == string(e.caBundle) {
			list[i].webhooks++
			return list
		}
	}
	return append(list, e)
}

func fromCRDClientConfig(cc *apiextensionsv1.WebhookClientConfig) admissionv1.WebhookClientConfig {
	out := admissionv1.WebhookClientConfig{URL: cc.URL, CABundle: cc.CABundle}
	if s := cc.Service; s != nil {
		out.Service = &admissionv1.ServiceReference{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
	}
	return out
}

// fixOperatorDown is the fix when no operator answers, naming its namespace.
func (env *doctorEnv) fixOperatorDown() string {
	return "start the operator (in a cluster: kubectl -n " + env.operatorNamespace + " get pods,deploy; locally: make dev-up) and look at its log"
}

// checkEndpoint checks one webhook endpoint and its CA bundle.
func (env *doctorEnv) checkEndpoint(ctx context.Context, check string, e endpoint) Finding {
	if len(e.caBundle) == 0 {
		return fail(check, "the operator injects its CA when running with --webhook-cert-management=self; with cert-manager, check the cainjector annotation",
			"%s: no CA bundle, the API server cannot trust the webhook", e.calls())
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(e.caBundle) {
		return fail(check, "re-inject the CA (restart the operator, or cert-manager's cainjector)", "%s: the CA bundle holds no PEM certificate", e.calls())
	}
	// The certificate to verify: the one served at a URL, or for a Service (whose cluster
	// IP this machine cannot dial) the one in the operator's Secret.
	var serving *servingCert
	if e.service != nil {
		if f, ok := env.checkService(ctx, check, e); !ok {
			return f
		}
		cert, err := env.secretCert(ctx)
		if err != nil {
			return fail(check, "the operator fills Secret "+env.operatorNamespace+"/"+env.secretName+" when it starts", "%s: no serving certificate to verify: %v", e.calls(), err)
		}
		serving = cert
	} else {
		cert, err := dialCert(ctx, e.url)
		if err != nil {
			return fail(check, env.fixOperatorDown(), "%s: it does not answer: %v", e.calls(), err)
		}
		serving = &servingCert{cert: cert, source: "served at " + e.url}
	}
	if env.serving == nil {
		env.serving = serving
	}
	_, err := serving.cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: e.host(), CurrentTime: env.now})
	if err != nil {
		return fail(check, "the operator re-injects its CA and renews the certificate when running; restart it if this persists",
			"%s: the CA bundle does not verify the serving certificate (%s) for %s: %v", e.calls(), serving.source, e.host(), err)
	}
	return pass(check, "%s; the CA bundle verifies the serving certificate for %s", e.calls(), e.host())
}

// checkService checks that a webhook Service exists and has a ready endpoint; the
// serving certificate then comes from the Secret (the plugin cannot dial a cluster IP).
func (env *doctorEnv) checkService(ctx context.Context, check string, e endpoint) (Finding, bool) {
	svc := &corev1.Service{}
	key := client.ObjectKey{Namespace: e.service.Namespace, Name: e.service.Name}
	if err := env.c.Get(ctx, key, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return fail(check, "kubectl apply -k config/default (it creates the webhook Service)",
				"webhook Service %s/%s is missing: the API server cannot call the webhooks", key.Namespace, key.Name), false
		}
		return fail(check, "", "read Service %s: %v", key, err), false
	}
	slices := &discoveryv1.EndpointSliceList{}
	if err := env.c.List(ctx, slices, client.InNamespace(key.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: key.Name}); err != nil {
		return fail(check, "", "list the endpoints of Service %s: %v", key, err), false
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ptr.Deref(ep.Conditions.Ready, false) {
				return Finding{}, true
			}
		}
	}
	return fail(check, env.fixOperatorDown(), "webhook Service %s/%s has no ready endpoint: no operator pod is ready to answer", key.Namespace, key.Name), false
}

// dialCert connects to a webhook URL and returns the certificate it serves, without
// verifying it: verification against the CA bundle is the caller's.
func dialCert(ctx context.Context, raw string) (*x509.Certificate, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	d := tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 3 * time.Second},
		// The certificate is verified against the CA bundle by the caller, with the
		// bundle the API server uses, not against this host's roots.
		Config: &tls.Config{InsecureSkipVerify: true, ServerName: u.Hostname()}, //nolint:gosec // verified by the caller
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, errors.New("no certificate served")
	}
	return certs[0], nil
}

// secretCert reads the serving certificate (tls.crt, never the key) from the Secret the
// operator keeps it in.
func (env *doctorEnv) secretCert(ctx context.Context) (*servingCert, error) {
	sec := &corev1.Secret{}
	key := client.ObjectKey{Namespace: env.operatorNamespace, Name: env.secretName}
	if err := env.c.Get(ctx, key, sec); err != nil {
		return nil, fmt.Errorf("read Secret %s: %w", key, err)
	}
	block, _ := pem.Decode(sec.Data[corev1.TLSCertKey])
	if block == nil {
		return nil, fmt.Errorf("Secret %s has no PEM certificate in %s", key, corev1.TLSCertKey) //nolint:staticcheck // Secret is a kind
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("read Secret %s: %w", key, err)
	}
	return &servingCert{cert: cert, source: "Secret " + key.String()}, nil
}

// checkCertificate checks the serving certificate's validity period: expired or not yet
// valid fails, less than a week left warns.
func checkCertificate(ctx context.Context, env *doctorEnv) []Finding {
	const check = "serving certificate"
	if env.serving == nil {
		cert, err := env.secretCert(ctx)
		if err != nil {
			return []Finding{fail(check, "the operator fills the Secret when it starts (--webhook-cert-management=self), or cert-manager does", "%v", err)}
		}
		env.serving = cert
	}
	c, now := env.serving.cert, env.now
	names := strings.Join(c.DNSNames, ",")
	const fixRenew = "the operator renews its certificate itself (--webhook-cert-management=self): make sure it runs, or restart it; with cert-manager, check the Certificate"
	switch {
	case now.After(c.NotAfter):
		return []Finding{fail(check, fixRenew, "expired %s ago (not after %s; %s, for %s)",
			duration.HumanDuration(now.Sub(c.NotAfter)), c.NotAfter.UTC().Format(time.RFC3339), env.serving.source, names)}
	case now.Before(c.NotBefore):
		return []Finding{fail(check, "check the clocks of this machine and of the operator", "not valid before %s (%s)", c.NotBefore.UTC().Format(time.RFC3339), env.serving.source)}
	case c.NotAfter.Sub(now) < 7*24*time.Hour:
		return []Finding{warn(check, fixRenew, "expires in %s (%s, for %s)", duration.HumanDuration(c.NotAfter.Sub(now)), env.serving.source, names)}
	}
	return []Finding{pass(check, "valid for %s more (%s, for %s)", duration.HumanDuration(c.NotAfter.Sub(now)), env.serving.source, names)}
}
