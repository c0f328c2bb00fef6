package webhook

import (
	"fmt"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The rotator reads what it watches, but may change only its own Secret, the two webhook
// configurations and the one CRD it injects a CA into.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// Creating the certificate Secret when it is missing needs create on secrets: RBAC cannot
// limit create to a resource name (the name is not known before the object exists). The
// DatabaseCluster controller has the same verb for credentials Secrets already.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=update;patch,resourceNames=mooring-webhook-server-cert
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=update;patch,resourceNames=mooring-mutating-webhook-configuration
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=update;patch,resourceNames=mooring-validating-webhook-configuration
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=update;patch,resourceNames=databaseclusters.mooring.dev

// Names of the objects whose CA bundle Mooring keeps current. They match config/default
// (kustomize prefixes "mooring-") and what `mooring-dev` installs on the local cluster.
const (
	MutatingConfigName   = "mooring-mutating-webhook-configuration"
	ValidatingConfigName = "mooring-validating-webhook-configuration"
	ConversionCRDName    = "databaseclusters.mooring.dev"
)

// CertOptions say where the serving certificate lives and who it is for.
type CertOptions struct {
	// Secret keeps the CA and serving certificate across restarts and replicas.
	Secret types.NamespacedName
	// CertDir is where the webhook server reads tls.crt and tls.key.
	CertDir string
	// DNSName is the name the API server dials: the webhook Service's DNS name in a
	// cluster, "localhost" when the operator runs on the API server's host.
	DNSName string
	// WriteFiles writes the certificate from the Secret into CertDir, for an operator
	// outside a cluster, where no volume mounts the Secret there.
	WriteFiles bool
}

// AddCertRotation makes the manager generate its own CA and serving certificate, keep them
// in a Secret, rotate them before they expire, and inject the CA into the webhook
// configurations and the DatabaseCluster CRD's conversion settings, so no cert-manager is
// needed. The returned channel closes once the certificate is on disk: register webhooks
// only then, because the webhook server reads it when it starts.
func AddCertRotation(mgr ctrl.Manager, o CertOptions) (<-chan struct{}, error) {
	ready := make(chan struct{})
	cr := &rotator.CertRotator{
		SecretKey:      o.Secret,
		CertDir:        o.CertDir,
		CAName:         "mooring-ca",
		CAOrganization: "mooring.dev",
		DNSName:        o.DNSName,
		IsReady:        ready,
		FieldOwner:     "mooring",
		Webhooks: []rotator.WebhookInfo{
			{Name: MutatingConfigName, Type: rotator.Mutating},
			{Name: ValidatingConfigName, Type: rotator.Validating},
			{Name: ConversionCRDName, Type: rotator.CRDConversion},
		},
		// Every replica serves webhooks, so every replica needs the certificate, not
		// only the leader.
		RequireLeaderElection: false,
	}
	// AddRotator fills in the rotator's defaults (validity, key usages, file names), which
	// ensureSecret issues the first certificates with.
	if err := rotator.AddRotator(mgr, cr); err != nil {
		return nil, fmt.Errorf("add certificate rotation: %w", err)
	}
	newCerts := func() (map[string][]byte, error) { return issue(cr) }
	if err := ensureSecret(mgr.GetConfig(), o.Secret, newCerts); err != nil {
		return nil, err
	}
	// While the operator runs, a deleted or corrupted Secret is put back (see secretKeeper).
	if err := keepSecret(mgr, o, cr.CAName, newCerts); err != nil {
		return nil, err
	}
	// And its CA is in every target before the rotator starts (see injectStoredCA).
	if err := injectStoredCA(mgr.GetConfig(), o.Secret); err != nil {
		return nil, err
	}
	if o.WriteFiles {
		// Once now, so that the webhook server can start before the caches sync (see
		// AwaitCertificate); then on every change.
		if err := writeStoredCert(mgr.GetConfig(), o.Secret, o.CertDir); err != nil {
			return nil, err
		}
		if err := SyncSecretToDir(mgr, o.Secret, o.CertDir); err != nil {
			return nil, err
		}
	}
	return ready, nil
}

// issue makes a CA and a serving certificate signed by it, as the rotator's own first
// pass does (same validity, an hour of clock skew allowed, same Secret keys), so the
// rotator finds them valid and keeps them.
func issue(cr *rotator.CertRotator) (map[string][]byte, error) {
	now := time.Now()
	begin := now.Add(-time.Hour)
	ca, err := cr.CreateCACert(begin, now.Add(cr.CaCertDuration))
	if err != nil {
		return nil, err
	}
	cert, key, err := cr.CreateCertPEM(ca, begin, now.Add(cr.ServerCertDuration))
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"ca.crt": ca.CertPEM, "ca.key": ca.KeyPEM, cr.CertName: cert, cr.KeyName: key}, nil
}
