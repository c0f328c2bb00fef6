package database

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dbtls"
	"github.com/mooringhq/mooring/internal/engine"
)

// Certificates are renewed in place: the Secrets are patched with the new pair.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=patch

// Annotations of the Secrets Mooring issues, so a reconcile tells whether one must be
// issued again from the metadata cache, without reading the key material.
const (
	certNamesAnnotation    = "mooring.dev/certificate-names"
	certNotAfterAnnotation = "mooring.dev/certificate-not-after"
	// renewCheckMax bounds the wait before a reconcile looks at the certificates again.
	renewCheckMax = 24 * time.Hour
)

// CASecretName is the cluster's CA: made once, kept while the cluster lives. It signs the
// server certificate (unless spec.tls brings one) and the superuser's client certificate.
func CASecretName(db *v1beta1.DatabaseCluster) string { return db.Name + v1beta1.CASecretSuffix }

// ServerCertSecretName is the Secret the servers' certificate is mounted from: the one
// spec.tls names, or the one Mooring issues.
func ServerCertSecretName(db *v1beta1.DatabaseCluster) string {
	if db.Spec.TLS != nil && db.Spec.TLS.ServerCertSecretName != "" {
		return db.Spec.TLS.ServerCertSecretName
	}
	return db.Name + v1beta1.TLSSecretSuffix
}

// SuperuserClientSecretName is the superuser's client certificate, which Mooring's own
// Jobs log in with over TLS when spec.superuserAccess is off.
func SuperuserClientSecretName(db *v1beta1.DatabaseCluster) string {
	return db.Name + v1beta1.SuperuserClientSecretSuffix
}

// ReplicationSecretName is the replication user's password, mounted only in the
// cluster's pods.
func ReplicationSecretName(db *v1beta1.DatabaseCluster) string {
	return db.Name + v1beta1.ReplicationSecretSuffix
}

// ServerNames are the names the server certificate carries: each Service's name in every
// form a client in the cluster may dial it by, and every pod's through the headless
// Service. The pods' longer forms are wildcards; the short one, "<pod>.<name>-headless",
// which replicas dial the primary by, is named pod by pod, because OpenSSL's hostname
// check (MariaDB's and MySQL's clients) takes a wildcard only with two labels after it.
func ServerNames(db *v1beta1.DatabaseCluster) []string {
	forms := func(host string) []string {
		return []string{host, host + "." + db.Namespace, host + "." + db.Namespace + ".svc", host + "." + db.Namespace + ".svc.cluster.local"}
	}
	var out []string
	out = append(out, forms(db.Name)...)
	out = append(out, forms(ReadOnlyServiceName(db))...)
	out = append(out, forms("*." + HeadlessServiceName(db))[1:]...)
	for i := range max(db.Spec.ReplicaCount, 1) {
		out = append(out, fmt.Sprintf("%s-%d.%s", db.Name, i, HeadlessServiceName(db)))
	}
	return out
}

// tlsSecret is a Secret Mooring issues: its name and what its certificate must name.
type tlsSecret struct {
	name  string
	names []string
	// client: a client certificate with names[0] as its common name.
	client bool
}

// ensureTLS makes sure of the cluster's CA, server certificate (unless spec.tls brings
// one), the superuser's client certificate and the replication password, issuing again
// what is missing, names other names than the cluster needs, or is within
// dbtls.RenewBefore of its end. It reports false (SecretReady=False) while the cluster
// must wait for the user, and how soon it must look again for a renewal.
func (h Handler) ensureTLS(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (ready bool, recheck time.Duration, err error) {
	db := s.Object
	if ok, err := h.ensureOwnSecret(ctx, s, CASecretName(db), func() (map[string][]byte, error) {
		ca, err := dbtls.NewCA(db.Namespace+"/"+db.Name, time.Now())
		return map[string][]byte{dbtls.CAKey: ca.Cert, "ca.key": ca.Key}, err
	}); err != nil || !ok {
		return false, 0, err
	}
	if ok, err := h.ensureOwnSecret(ctx, s, ReplicationSecretName(db), func() (map[string][]byte, error) {
		pw, err := randomPassword()
		return map[string][]byte{PasswordKey: []byte(pw)}, err
	}); err != nil || !ok {
		return false, 0, err
	}
	issued := []tlsSecret{{name: SuperuserClientSecretName(db), names: []string{adminUser(db.Spec.Engine)}, client: true}}
	if db.Spec.TLS == nil {
		issued = append(issued, tlsSecret{name: ServerCertSecretName(db), names: ServerNames(db)})
	} else if ok, err := h.userTLSSecretExists(ctx, s); err != nil || !ok {
		return false, 0, err
	}
	recheck = renewCheckMax
	for _, want := range issued {
		ok, next, err := h.ensureIssued(ctx, s, want)
		if err != nil || !ok {
			return false, 0, err
		}
		recheck = min(recheck, next)
	}
	return true, recheck, nil
}

// ensureOwnSecret creates a Secret of Mooring's for the cluster, with the data generate
// makes, when it is missing, and never changes it; one of that name somebody else made
// is refused.
func (h Handler) ensureOwnSecret(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], name string, generate func() (map[string][]byte, error)) (bool, error) {
	current, found, err := h.secretMetaOf(ctx, s, name)
	if err != nil {
		return false, err
	}
	if found {
		return h.mine(s, current), nil
	}
	data, err := generate()
	if err != nil {
		return false, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeOpaque, Data: data}
	_, err = s.CreateOnce(ctx, secret, engine.Announce(corev1.EventTypeNormal, engine.EventCreated, "Create", "Created Secret "+name))
	return err == nil, err
}

// ensureIssued makes sure the certificate Secret want exists and needs no renewal. It
// returns how long the certificate may stay before it must be issued again.
func (h Handler) ensureIssued(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], want tlsSecret) (bool, time.Duration, error) {
	db := s.Object
	now := time.Now()
	current, found, err := h.secretMetaOf(ctx, s, want.name)
	if err != nil {
		return false, 0, err
	}
	if found && !h.mine(s, current) {
		return false, 0, nil
	}
	if found {
		if left, ok := stillGood(current, want.names, now); ok {
			return true, left, nil
		}
		// The cache may lag behind this controller's last renewal: ask the API server.
		fresh := secretMeta()
		if err := h.APIReader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: want.name}, fresh); err != nil {
			return false, 0, fmt.Errorf("get Secret %s: %w", want.name, err)
		}
		if left, ok := stillGood(fresh, want.names, now); ok {
			return true, left, nil
		}
	}
	caSecret := &corev1.Secret{}
	if err := h.APIReader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: CASecretName(db)}, caSecret); err != nil {
		return false, 0, fmt.Errorf("read Secret %s: %w", CASecretName(db), err)
	}
	ca := dbtls.Pair{Cert: caSecret.Data[dbtls.CAKey], Key: caSecret.Data["ca.key"]}
	var pair dbtls.Pair
	if want.client {
		pair, err = dbtls.IssueClient(ca, want.names[0], now)
	} else {
		pair, err = dbtls.IssueServer(ca, want.names, now)
	}
	if err != nil {
		return false, 0, fmt.Errorf("issue the certificate of Secret %s: %w", want.name, err)
	}
	cert, err := dbtls.ParseCert(pair.Cert)
	if err != nil {
		return false, 0, err
	}
	annotations := map[string]string{
		certNamesAnnotation:    dbtls.NamesHash(want.names),
		certNotAfterAnnotation: cert.NotAfter.UTC().Format(time.RFC3339),
	}
	data := map[string][]byte{dbtls.CertKey: pair.Cert, dbtls.KeyKey: pair.Key, dbtls.CAKey: ca.Cert}
	if !found {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: want.name, Annotations: annotations},
			Type:       corev1.SecretTypeTLS, Data: data,
		}
		_, err := s.CreateOnce(ctx, secret, engine.Announce(corev1.EventTypeNormal, engine.EventCreated, "Create", "Issued Secret "+want.name))
		return err == nil, certLeft(cert, now), err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: want.name, Namespace: db.Namespace, Annotations: annotations}, Data: data}
	if err := s.Patch(ctx, secret, client.MergeFrom(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: want.name, Namespace: db.Namespace}}),
		engine.Announce(corev1.EventTypeNormal, "CertificateRenewed", "Renew", "Issued the certificate of Secret "+want.name+" again: it named other names or was near its end")); err != nil {
		return false, 0, err
	}
	return true, certLeft(cert, now), nil
}

// stillGood reports whether an issued Secret's annotations say its certificate names
// names and is not within dbtls.RenewBefore of its end, and how long until it is.
func stillGood(m metav1.Object, names []string, now time.Time) (time.Duration, bool) {
	a := m.GetAnnotations()
	if a[certNamesAnnotation] != dbtls.NamesHash(names) {
		return 0, false
	}
	end, err := time.Parse(time.RFC3339, a[certNotAfterAnnotation])
	if err != nil {
		return 0, false
	}
	left := end.Sub(now) - dbtls.RenewBefore
	return left, left > 0
}

// certLeft is how long until c must be issued again.
func certLeft(c *x509.Certificate, now time.Time) time.Duration {
	return c.NotAfter.Sub(now) - dbtls.RenewBefore
}

// secretMetaOf reads a Secret's metadata from the cache, or from the API server when the
// cache has none (it may lag behind a create of an earlier reconcile).
func (h Handler) secretMetaOf(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], name string) (*metav1.PartialObjectMetadata, bool, error) {
	key := client.ObjectKey{Namespace: s.Object.Namespace, Name: name}
	m := secretMeta()
	err := s.Client.Get(ctx, key, m)
	if apierrors.IsNotFound(err) {
		err = h.APIReader.Get(ctx, key, m)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("get Secret %s: %w", name, err)
	}
	return m, true, nil
}

// mine reports whether Mooring made the Secret for this cluster; one it did not is not
// used or changed, and SecretReady says so.
func (h Handler) mine(s *engine.Scope[*v1beta1.DatabaseCluster], m *metav1.PartialObjectMetadata) bool {
	if metav1.IsControlledBy(m, s.Object) {
		return true
	}
	setSecretCondition(s, metav1.ConditionFalse, v1beta1.ReasonTLSSecretConflict, fmt.Sprintf(
		"Secret %s exists but was not made by Mooring for this cluster; Mooring keeps the cluster's certificates and "+
			"replication password under that name. Rename or delete that Secret.", m.Name))
	return false
}

// userTLSSecretExists checks the Secret spec.tls names (its keys are the kubelet's to
// find: a pod without them does not start, and says why).
func (h Handler) userTLSSecretExists(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (bool, error) {
	name := ServerCertSecretName(s.Object)
	if _, found, err := h.secretMetaOf(ctx, s, name); err != nil || found {
		return found, err
	}
	setSecretCondition(s, metav1.ConditionFalse, v1beta1.ReasonTLSSecretNotFound, fmt.Sprintf(
		"Secret %s named in spec.tls.serverCertSecretName does not exist; create it with keys %q, %q and %q.",
		name, dbtls.CertKey, dbtls.KeyKey, dbtls.CAKey))
	return false, nil
}

// CACerts remembers, per server certificate Secret, the ca.crt of the version last read,
// which the binding carries: the Secret is read again (past the cache, which keeps no
// Secret data) only after it changed. The zero value is ready to use; a nil *CACerts
// remembers nothing.
type CACerts struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]caCertAt
}

type caCertAt struct {
	resourceVersion string
	ca              string
}

// bindingCA is the CA bound Apps verify the servers with: ca.crt of the server
// certificate's Secret.
func (h Handler) bindingCA(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (string, error) {
	key := client.ObjectKey{Namespace: s.Object.Namespace, Name: ServerCertSecretName(s.Object)}
	m, found, err := h.secretMetaOf(ctx, s, key.Name)
	if err != nil || !found {
		return "", err
	}
	if c := h.CACerts; c != nil {
		c.mu.Lock()
		at, ok := c.seen[key]
		c.mu.Unlock()
		if ok && at.resourceVersion == m.ResourceVersion {
			return at.ca, nil
		}
	}
	secret := &corev1.Secret{}
	if err := h.APIReader.Get(ctx, key, secret); err != nil {
		return "", fmt.Errorf("read Secret %s: %w", key.Name, err)
	}
	ca := string(secret.Data[dbtls.CAKey])
	if c := h.CACerts; c != nil {
		c.mu.Lock()
		if c.seen == nil {
			c.seen = map[types.NamespacedName]caCertAt{}
		}
		c.seen[key] = caCertAt{secret.ResourceVersion, ca}
		c.mu.Unlock()
	}
	return ca, nil
}

// withBindingTLS adds to the binding ConfigMap among children the CA bound Apps verify the
// server with, and the mode that makes them verify it and its name: libpq's sslmode for
// PostgreSQL, the ssl-mode of MySQL's clients (which MariaDB's connectors read too).
func withBindingTLS(db *v1beta1.DatabaseCluster, children []client.Object, ca string) {
	for _, c := range children {
		cm, ok := c.(*corev1.ConfigMap)
		if !ok || cm.Name != BindingConfigMapName(db) || ca == "" {
			continue
		}
		cm.Data[dbtls.CAKey] = ca
		if db.Spec.Engine == v1beta1.PostgreSQL {
			cm.Data["sslmode"] = "verify-full"
		} else {
			cm.Data["ssl-mode"] = "VERIFY_IDENTITY"
		}
	}
}
