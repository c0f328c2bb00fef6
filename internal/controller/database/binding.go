package database

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/instance"
)

// BindingProvider is the servicebinding.io "provider" entry of every Mooring binding.
const BindingProvider = "mooring"

// BindingConfigMapName is the ConfigMap with the cluster's non-secret binding entries.
func BindingConfigMapName(db *v1beta1.DatabaseCluster) string { return db.Name + "-binding" }

// BindingConfigMap makes the cluster a servicebinding.io provisioned service: the entries
// type, provider, host, port and database. username and password stay in the credentials
// Secret, which Apps project next to this ConfigMap, so Mooring copies no secret.
func BindingConfigMap(db *v1beta1.DatabaseCluster) *corev1.ConfigMap {
	data := map[string]string{
		"type":     string(db.Spec.Engine),
		"provider": BindingProvider,
		"host":     db.Name + "." + db.Namespace + ".svc",
		"port":     strconv.Itoa(int(Port(db))),
	}
	// The database the instance manager gives the application user: PostgreSQL's
	// "postgres" (the one pg_dump dumps too), and for MariaDB and MySQL, which have no
	// default database, "app".
	data["database"] = defaultDatabase
	if db.Spec.Engine != v1beta1.PostgreSQL {
		data["database"] = instance.MySQLAppDatabase
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: BindingConfigMapName(db), Labels: engine.Labels(Component, db.Name)},
		Data:       data,
	}
}

// bindingStatus names the binding's ConfigMap and Secret.
func bindingStatus(db *v1beta1.DatabaseCluster) *v1beta1.ServiceBindingStatus {
	return &v1beta1.ServiceBindingStatus{Name: BindingConfigMapName(db), SecretName: db.Spec.SecretName}
}
