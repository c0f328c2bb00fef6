package database

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/instance"
)

// The credentials Job reaches the database as the superuser, with every credential taken
// from a Secret by reference: its spec holds no password.
func TestCredentialsJob(t *testing.T) {
	for _, tt := range []struct {
		engine         v1beta1.DatabaseEngine
		version, image string
	}{
		{v1beta1.PostgreSQL, "17", "docker.io/library/postgres:17"},
		{v1beta1.MySQL, "8.4", "docker.io/library/mysql:8.4"},
	} {
		t.Run(string(tt.engine), func(t *testing.T) {
			db := newDB(tt.engine, func(d *v1beta1.DatabaseCluster) { d.Spec.Version = tt.version })
			job := CredentialsJob(db, "0123456789abcdef")
			if job.Name != "orders-credentials-01234567" || job.Annotations[v1beta1.CredentialsHashAnnotation] != "0123456789abcdef" ||
				job.Labels[v1beta1.CredentialsJobLabel] != "credentials" {
				t.Errorf("job %s labels %v annotations %v", job.Name, job.Labels, job.Annotations)
			}
			pod := job.Spec.Template
			if pod.Labels["app.kubernetes.io/component"] == Component {
				t.Errorf("pod labels %v: the cluster's Services would select the Job's pod", pod.Labels)
			}
			c := pod.Spec.Containers[0]
			if c.Image != tt.image || strings.Join(c.Command[:2], " ") != "/bin/sh -c" || c.Command[2] != CredentialsScript || len(c.Args) != 0 {
				t.Errorf("image %s command %v args %v", c.Image, c.Command[:2], c.Args)
			}
			from := map[string]string{}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					from[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
				}
			}
			// The application user's credentials alone: no superuser password.
			want := map[string]string{
				"APP_USERNAME": "orders-credentials/username",
				"APP_PASSWORD": "orders-credentials/password",
			}
			for name, ref := range want {
				if from[name] != ref {
					t.Errorf("env %s from %q, want secretKeyRef %s", name, from[name], ref)
				}
			}
			if len(from) != len(want) {
				t.Errorf("env from Secrets %v, want exactly %v", from, want)
			}
			// The server is verified with the CA of its certificate's Secret, ca.crt alone.
			ca := ""
			for _, e := range c.Env {
				if e.Name == "DB_CA_FILE" {
					ca = e.Value
				}
			}
			var caSecret string
			for _, v := range pod.Spec.Volumes {
				if v.Secret != nil && len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "ca.crt" {
					caSecret = v.Secret.SecretName
				}
			}
			if ca != "/etc/mooring/server-ca/ca.crt" || caSecret != "orders-tls" {
				t.Errorf("DB_CA_FILE %q from Secret %q, want /etc/mooring/server-ca/ca.crt from orders-tls", ca, caSecret)
			}
			if *pod.Spec.SecurityContext.RunAsNonRoot != true || !*c.SecurityContext.ReadOnlyRootFilesystem || *pod.Spec.AutomountServiceAccountToken {
				t.Errorf("pod is not locked down: %+v %+v", pod.Spec.SecurityContext, c.SecurityContext)
			}
			if *job.Spec.BackoffLimit < 1 || job.Spec.ActiveDeadlineSeconds == nil {
				t.Errorf("job spec %+v has no retries or no deadline", job.Spec)
			}
		})
	}
}

// The pods take the application user's credentials from spec.secretName, the
// superuser's from the admin Secret and the replication user's from a Secret of its own,
// so that changing one leaves the others as they were; with the server certificate and
// the CA of client certificates, all are mounted as files where the instance manager
// reads them.
func TestStatefulSetCredentialSources(t *testing.T) {
	for _, engine := range []v1beta1.DatabaseEngine{v1beta1.PostgreSQL, v1beta1.MySQL, v1beta1.MariaDB} {
		sts, err := StatefulSet(newDB(engine, nil))
		if err != nil {
			t.Fatal(err)
		}
		pod := sts.Spec.Template.Spec
		secrets := map[string]string{}
		for _, v := range pod.Volumes {
			if v.Secret != nil {
				secrets[v.Name] = v.Secret.SecretName
			}
		}
		got := map[string]string{}
		for _, m := range pod.Containers[0].VolumeMounts {
			if name, ok := secrets[m.Name]; ok {
				got[m.MountPath] = name
				if !m.ReadOnly {
					t.Errorf("%s: Secret %s mounted writable", engine, name)
				}
			}
		}
		want := map[string]string{instance.AppSecretDir: "orders-credentials", instance.AdminSecretDir: "orders-admin",
			instance.ReplicationSecretDir: "orders-replication", instance.TLSDir: "orders-tls", instance.ClientCADir: "orders-ca"}
		if !maps.Equal(got, want) {
			t.Errorf("%s: Secrets mounted %v, want %v", engine, got, want)
		}
	}
	s := AdminSecret(newDB(v1beta1.MySQL, nil), "pw")
	if s.Name != "orders-admin" || s.StringData[UsernameKey] != "root" || s.StringData[PasswordKey] != "pw" || len(s.OwnerReferences) != 0 ||
		!isAdminSecretOf(s, newDB(v1beta1.MySQL, nil)) {
		t.Errorf("admin secret %s %v labels %v owners %v", s.Name, s.StringData, s.Labels, s.OwnerReferences)
	}
}

func TestFingerprints(t *testing.T) {
	db := newDB(v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.UID = types.UID("uid-1") })
	secret := func(user, password string) *corev1.Secret {
		return &corev1.Secret{Data: map[string][]byte{UsernameKey: []byte(user), PasswordKey: []byte(password)}}
	}
	fp := func(user, password, admin string) fingerprints {
		t.Helper()
		f, err := fingerprintsOf(db, secret(user, password), secret("postgres", admin))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	base := fp("app", "secret-pw", "admin-pw")
	if again := fp("app", "secret-pw", "admin-pw"); again != base {
		t.Fatalf("fingerprints differ for the same Secrets: %+v %+v", base, again)
	}
	if len(base.credentials) != 32 || len(base.admin) != 32 || base.superuser {
		t.Errorf("fingerprints %+v", base)
	}
	for name, other := range map[string]fingerprints{
		"password": fp("app", "secret-pX", "admin-pw"),
		"username": fp("apq", "secret-pw", "admin-pw"),
		"boundary": fp("apps", "ecret-pw", "admin-pw"),
	} {
		if other.credentials == base.credentials || other.admin != base.admin {
			t.Errorf("another %s: %+v, base %+v", name, other, base)
		}
	}
	if other := fp("app", "secret-pw", "admin-pX"); other.admin == base.admin {
		t.Error("another superuser password has the same fingerprint")
	}
	db.UID = "uid-2"
	if other := fp("app", "secret-pw", "admin-pw"); other.admin == base.admin || other.credentials == base.credentials {
		t.Error("another cluster has the same fingerprints for the same passwords")
	}
	if !fp("postgres", "x", "admin-pw").superuser {
		t.Error("credentials naming postgres are not the superuser's")
	}
	// A cluster older than its admin Secret has the application's password as the
	// superuser's. A fingerprint keyed with that password would let anyone who reads the
	// status test a guess with one HMAC; it must take the PBKDF2 instead.
	shared := fp("app", "secret-pw", "secret-pw")
	cheap := hmac.New(sha256.New, []byte("secret-pw"))
	fmt.Fprintf(cheap, "mooring.dev/credentials\x00%s\x00%d\x00%d\x00", db.UID, len("app"), len("secret-pw"))
	cheap.Write([]byte("appsecret-pw"))
	if shared.credentials == hex.EncodeToString(cheap.Sum(nil)[:16]) {
		t.Error("the credentials fingerprint is an HMAC keyed with the password itself")
	}
}
