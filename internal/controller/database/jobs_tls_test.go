package database

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dump"
)

// The restore Job logs in as the superuser over TLS, the server verified against the CA
// of its certificate's Secret, with the superuser's client certificate: PostgreSQL's
// client through its environment, MariaDB's and MySQL's through ~/.my.cnf.
func TestRestoreJobTLS(t *testing.T) {
	b := &mooringv1.Backup{}
	b.Name = "nightly"
	for _, tc := range []struct {
		engine v1beta1.DatabaseEngine
		want   []string
	}{
		{v1beta1.PostgreSQL, []string{"PGSSLMODE=verify-full", "PGSSLROOTCERT=/etc/mooring/server-ca/ca.crt",
			"PGSSLCERT=/etc/mooring/client-cert/tls.crt", "PGSSLKEY=/etc/mooring/client-cert/tls.key"}},
		{v1beta1.MariaDB, []string{"ssl-ca=/etc/mooring/server-ca/ca.crt", "ssl-cert=/etc/mooring/client-cert/tls.crt",
			"ssl-key=/etc/mooring/client-cert/tls.key", "\nssl\nssl-verify-server-cert\n"}},
		{v1beta1.MySQL, []string{"ssl-ca=/etc/mooring/server-ca/ca.crt", "\nssl-mode=VERIFY_IDENTITY\n"}},
	} {
		t.Run(string(tc.engine), func(t *testing.T) {
			db := newDB(tc.engine, func(d *v1beta1.DatabaseCluster) {
				d.Spec.Bootstrap = &v1beta1.BootstrapSpec{Backup: &v1beta1.BootstrapBackup{Name: "nightly"}}
			})
			pod := RestoreJob(db, b).Spec.Template.Spec
			var seen []string
			for _, c := range append(pod.InitContainers, pod.Containers...) {
				for _, e := range c.Env {
					seen = append(seen, e.Name+"="+e.Value)
				}
			}
			text := strings.Join(seen, "\n")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the restore Job lacks %q in:\n%s", w, text)
				}
			}
			secrets := map[string]string{}
			for _, v := range pod.Volumes {
				if v.Secret != nil {
					var keys []string
					for _, i := range v.Secret.Items {
						keys = append(keys, i.Key)
					}
					secrets[v.Secret.SecretName] = strings.Join(keys, ",")
				}
			}
			if secrets["orders-tls"] != "ca.crt" || secrets["orders-superuser-client"] != "tls.crt,tls.key" {
				t.Errorf("Secrets mounted %v: want the server's ca.crt alone and the client certificate", secrets)
			}
			if tc.engine != v1beta1.PostgreSQL {
				if len(pod.InitContainers) != 1 || !hasMount(pod.InitContainers[0], "/tmp") {
					t.Errorf("init containers %+v: want one writing /tmp/.my.cnf", pod.InitContainers)
				}
			}
		})
	}
}

func hasMount(c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// The Backups' dumps and the final snapshot reach the primary through DumpTarget: over
// TLS with the server verified against the CA of its certificate's Secret, as the
// application user, with no client certificate.
func TestDumpTargetVerifiesTheServer(t *testing.T) {
	for _, engine := range []v1beta1.DatabaseEngine{v1beta1.PostgreSQL, v1beta1.MariaDB} {
		pod := dump.PodTemplate(dump.Dump{Database: DumpTarget(newDB(engine, nil)), Volume: dump.Volume{ClaimName: "c", Path: "/b"}}).Spec
		var text []string
		for _, c := range append(pod.InitContainers, pod.Containers...) {
			for _, e := range c.Env {
				text = append(text, e.Name+"="+e.Value)
			}
		}
		all := strings.Join(text, "\n")
		want := "PGSSLMODE=verify-full"
		if engine != v1beta1.PostgreSQL {
			want = "ssl-ca=/etc/mooring/server-ca/ca.crt\nssl\nssl-verify-server-cert\n"
		}
		if !strings.Contains(all, want) || strings.Contains(all, "client-cert") {
			t.Errorf("%s dump pod env:\n%s\nwant %q and no client certificate", engine, all, want)
		}
	}
}
