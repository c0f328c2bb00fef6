package database_test

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/dbtls"
	"github.com/mooringhq/mooring/internal/testutil"
)

// secretData reads a Secret, failing the test without it.
func secretData(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("Secret %s: %v", name, err)
	}
	return s
}

// touch changes an annotation of the cluster, which brings a reconcile.
func touch(t *testing.T, db *v1beta1.DatabaseCluster) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"test.mooring.dev/touched":%q}}}`, time.Now().Format(time.RFC3339Nano)))
	if err := env.Client.Patch(ctx, db, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// A new cluster gets a CA of its own, a server certificate signed by it for every name
// a client dials (the Services in each form, each pod through the headless Service), the
// superuser's client certificate and a replication password, all owned by the cluster;
// the binding carries the CA and verify-full. A certificate that no longer names what the
// cluster needs is issued again, in place, under the same CA.
func TestClusterTLSSecrets(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "secure", v1beta1.PostgreSQL, nil)
	key := client.ObjectKeyFromObject(db)
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "SecretReady=True", func(d *v1beta1.DatabaseCluster) error {
		if c := condition(d, v1beta1.ConditionSecretReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("SecretReady %+v", c)
		}
		return nil
	})
	live := &v1beta1.DatabaseCluster{}
	if err := env.Client.Get(ctx, key, live); err != nil {
		t.Fatal(err)
	}
	ca := secretData(t, ns, "secure-ca")
	server := secretData(t, ns, "secure-tls")
	su := secretData(t, ns, "secure-superuser-client")
	repl := secretData(t, ns, "secure-replication")
	for _, s := range []*corev1.Secret{ca, server, su, repl} {
		if !metav1.IsControlledBy(s, live) {
			t.Errorf("Secret %s is not owned by the cluster: %v", s.Name, s.OwnerReferences)
		}
	}
	if len(repl.Data[database.PasswordKey]) < 20 {
		t.Errorf("replication password of %d bytes", len(repl.Data[database.PasswordKey]))
	}
	caCert, err := dbtls.ParseCert(ca.Data[dbtls.CAKey])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	cert, err := dbtls.ParseCert(server.Data[dbtls.CertKey])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"secure", "secure." + ns + ".svc", "secure-ro." + ns + ".svc.cluster.local",
		"secure-0.secure-headless", "secure-2.secure-headless." + ns + ".svc"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("the server certificate does not verify for %s: %v", name, err)
		}
	}
	// The short names replicas dial the primary by are named, not matched by a wildcard:
	// OpenSSL (MariaDB's and MySQL's clients) refuses "*.secure-headless".
	for _, name := range []string{"secure-0.secure-headless", "secure-1.secure-headless"} {
		if !slices.Contains(cert.DNSNames, name) {
			t.Errorf("the server certificate's names %v lack %s", cert.DNSNames, name)
		}
	}
	if !bytes.Equal(server.Data[dbtls.CAKey], ca.Data[dbtls.CAKey]) || server.Data["ca.key"] != nil {
		t.Errorf("the server Secret's ca.crt is not the CA's, or it holds the CA's key")
	}
	suCert, err := dbtls.ParseCert(su.Data[dbtls.CertKey])
	if err != nil || suCert.Subject.CommonName != "postgres" || suCert.CheckSignatureFrom(caCert) != nil {
		t.Errorf("superuser client certificate %v (%v), want CN=postgres signed by the CA", suCert.Subject, err)
	}
	testutil.WaitFor(t, env.Client, client.ObjectKey{Namespace: ns, Name: "secure-binding"}, &corev1.ConfigMap{}, "the binding's CA",
		func(cm *corev1.ConfigMap) error {
			if cm.Data["ca.crt"] != string(ca.Data[dbtls.CAKey]) || cm.Data["sslmode"] != "verify-full" {
				return fmt.Errorf("binding %v", cm.Data)
			}
			return nil
		})

	// A certificate naming other names (as after a rename of the Services) is issued
	// again, under the same CA, and the CA is never made again.
	stale := server.DeepCopy()
	stale.Annotations["mooring.dev/certificate-names"] = "stale"
	if err := env.Client.Update(ctx, stale); err != nil {
		t.Fatal(err)
	}
	touch(t, live)
	testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(server), &corev1.Secret{}, "a new server certificate", func(s *corev1.Secret) error {
		if bytes.Equal(s.Data[dbtls.CertKey], server.Data[dbtls.CertKey]) || s.Annotations["mooring.dev/certificate-names"] == "stale" {
			return fmt.Errorf("the certificate was not issued again")
		}
		return nil
	})
	if again := secretData(t, ns, "secure-ca"); !bytes.Equal(again.Data["ca.key"], ca.Data["ca.key"]) {
		t.Error("the CA was made again")
	}
}

// spec.tls brings the user's certificate: the pods mount it, the binding carries its
// CA, and Mooring issues no server certificate; until the Secret exists the cluster says
// it waits for it.
func TestClusterTLSOfTheUser(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "own", v1beta1.MariaDB, func(d *v1beta1.DatabaseCluster) {
		d.Spec.TLS = &v1beta1.DatabaseTLSSpec{ServerCertSecretName: "own-cert"}
	})
	key := client.ObjectKeyFromObject(db)
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "SecretReady=False/TLSSecretNotFound", func(d *v1beta1.DatabaseCluster) error {
		if c := condition(d, v1beta1.ConditionSecretReady); c == nil || c.Reason != v1beta1.ReasonTLSSecretNotFound {
			return fmt.Errorf("SecretReady %+v", c)
		}
		return nil
	})
	ca, err := dbtls.NewCA("the user's", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := dbtls.IssueServer(ca, []string{"own"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "own-cert", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{dbtls.CertKey: pair.Cert, dbtls.KeyKey: pair.Key, dbtls.CAKey: ca.Cert}}); err != nil {
		t.Fatal(err)
	}
	touch(t, db)
	testutil.WaitFor(t, env.Client, client.ObjectKey{Namespace: ns, Name: "own-binding"}, &corev1.ConfigMap{}, "the binding's CA",
		func(cm *corev1.ConfigMap) error {
			if cm.Data["ca.crt"] != string(ca.Cert) || cm.Data["ssl-mode"] != "VERIFY_IDENTITY" {
				return fmt.Errorf("binding %v", cm.Data)
			}
			return nil
		})
	testutil.WaitFor(t, env.Client, key, &appsv1.StatefulSet{}, "the StatefulSet mounting own-cert", func(s *appsv1.StatefulSet) error {
		for _, v := range s.Spec.Template.Spec.Volumes {
			if v.Name == "tls" && v.Secret != nil && v.Secret.SecretName == "own-cert" {
				return nil
			}
		}
		return fmt.Errorf("volumes %v", s.Spec.Template.Spec.Volumes)
	})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "own-tls"}, &corev1.Secret{}); err == nil {
		t.Error("Mooring issued a server certificate beside the user's")
	}
}
