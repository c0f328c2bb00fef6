package webhook

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// A credentials Secret that names one of the database's own accounts as the application
// user is refused at admission, naming spec.secretName; ordinary names, and Secrets not
// there yet, are admitted.
func TestValidateAppUserNotReserved(t *testing.T) {
	secret := func(name, user string) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}, Data: map[string][]byte{"username": []byte(user), "password": []byte("pw")}}
	}
	reader := fake.NewClientBuilder().WithScheme(bootstrapScheme(t)).WithObjects(
		secret("as-replicator", "replicator"), secret("as-postgres", "postgres"), secret("as-root", "root"),
		secret("as-sys", "mariadb.sys"), secret("as-mysql-session", "mysql.session"), secret("as-pg-role", "pg_monitor"),
		secret("as-app", "app"),
	).Build()
	for name, tt := range map[string]struct {
		engine v1beta1.DatabaseEngine
		secret string
		want   bool
	}{
		"replicator on PostgreSQL": {v1beta1.PostgreSQL, "as-replicator", true},
		"postgres on PostgreSQL":   {v1beta1.PostgreSQL, "as-postgres", true},
		"a pg_ role":               {v1beta1.PostgreSQL, "as-pg-role", true},
		"root on MariaDB":          {v1beta1.MariaDB, "as-root", true},
		"replicator on MySQL":      {v1beta1.MySQL, "as-replicator", true},
		"mariadb.sys":              {v1beta1.MariaDB, "as-sys", true},
		"a mysql.* account":        {v1beta1.MySQL, "as-mysql-session", true},
		"root on PostgreSQL":       {v1beta1.PostgreSQL, "as-root", false},
		"app":                      {v1beta1.MariaDB, "as-app", false},
		"a Secret not there yet":   {v1beta1.PostgreSQL, "later", false},
	} {
		t.Run(name, func(t *testing.T) {
			db := cluster(tt.engine, DefaultVersion(tt.engine))
			db.Namespace = "shop"
			db.Spec.SecretName = tt.secret
			_, err := (DatabaseClusterValidator{Reader: reader, Reviewer: allowAll}).ValidateCreate(asUser("alice"), db)
			if !tt.want {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.secretName") || !strings.Contains(err.Error(), "reserved") {
				t.Fatalf("got %v, want an Invalid error on spec.secretName saying the user is reserved", err)
			}
			if strings.Contains(err.Error(), `"pw"`) {
				t.Errorf("the error shows the Secret's password: %v", err)
			}
		})
	}
}
