package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// lastBackupDesc is the backup age of each DatabaseCluster, for the database alerts and
// dashboard: the instance manager in the database pod cannot see Backups (it has no
// access to the API), the operator reads their status anyway, and a cluster may have
// several Backups or none, which only a view over all of them can tell.
var lastBackupDesc = prometheus.NewDesc("mooring_database_last_backup_timestamp_seconds",
	"When the newest successful backup of the DatabaseCluster finished, over all its Backups, in seconds since the epoch; the cluster's creation time while none has succeeded (no Backup, or none succeeded yet), so that time() minus it is how long the cluster's data has gone without a backup.",
	[]string{"namespace", "name"}, nil)

// emitDatabaseBackups sends each DatabaseCluster's lastBackupDesc from the listed
// resources: its Backups by their spec.databaseRef.
func emitDatabaseBackups(ch chan<- prometheus.Metric, resources []resource) {
	type key struct{ namespace, name string }
	newest := map[key]time.Time{}
	for _, r := range resources {
		if r.backup == nil || r.backup.database == "" || r.backup.lastSuccess.IsZero() {
			continue
		}
		k := key{r.namespace, r.backup.database}
		if r.backup.lastSuccess.After(newest[k]) {
			newest[k] = r.backup.lastSuccess
		}
	}
	for _, r := range resources {
		if r.database == nil {
			continue
		}
		t, ok := newest[key{r.namespace, r.name}]
		if !ok {
			t = r.database.created
		}
		ch <- prometheus.MustNewConstMetric(lastBackupDesc, prometheus.GaugeValue, float64(t.Unix()), r.namespace, r.name)
	}
}
