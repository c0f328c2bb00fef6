package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// db selects the instance managers' series (mooring_db_*) of the chosen cluster: the
// PodMonitor databases labels them with namespace, cluster and pod.
const db = `namespace=~"$namespace",cluster=~"$cluster"`

// Database shows one DatabaseCluster from its instance managers' metrics
// (docs/database-metrics.md): which instance is the primary, replication lag and slots,
// connections, transactions, sizes, WAL or binlog, the volumes and the backup age.
func Database() (dashboard.Dashboard, error) {
	return base("mooring-database", "Mooring / Database",
		"One DatabaseCluster from its instance managers' metrics: roles, replication, connections, transactions, sizes, WAL or binlog, volumes, backup age.").
		WithVariable(dashboard.NewQueryVariableBuilder("namespace").
			Label("Namespace").
			Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(mooring_db_up, namespace)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged)).
		WithVariable(dashboard.NewQueryVariableBuilder("cluster").
			Label("DatabaseCluster").
			Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(mooring_db_up{namespace=~"$namespace"}, cluster)`)}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged)).
		WithRow(dashboard.NewRowBuilder("Instances")).
		WithPanel(single("Instances up", "short", "Instances whose manager's last query round succeeded.",
			query("sum(mooring_db_up{"+db+"})", ""))).
		WithPanel(single("Primary", "short", "Instances that report themselves primary; exactly one should.",
			query(`sum(mooring_db_role{role="primary",`+db+`})`, ""))).
		WithPanel(single("Last backup age", "s", "Time since the newest successful backup of the cluster over all its Backups (since its creation while none succeeded), from the operator.",
			query(`time() - max(mooring_database_last_backup_timestamp_seconds{namespace=~"$namespace",name=~"$cluster"})`, ""))).
		WithPanel(single("Fullest volume", "percentunit", "The highest share of a data volume in use over the cluster's instances.",
			query("max(1 - mooring_db_volume_available_bytes{"+db+"} / mooring_db_volume_size_bytes{"+db+"})", ""))).
		WithPanel(grid("Roles", "Each instance's role as it reports it (1 for the current one).",
			instant("mooring_db_role{"+db+"} == 1"))).
		WithRow(dashboard.NewRowBuilder("Replication")).
		WithPanel(graph("Replication lag", "s", "How far behind its primary what each replica applied is.",
			query("max by (pod) (mooring_db_replication_lag_seconds{"+db+"})", "{{pod}}"))).
		WithPanel(graph("Replication lag (bytes)", "bytes", "WAL or binlog each replica received but has not applied; on a PostgreSQL primary, what each replica has still to replay.",
			query("max by (pod) (mooring_db_replication_lag_bytes{"+db+"})", "{{pod}} received, not applied"),
			query("max by (replica) (mooring_db_replica_lag_bytes{"+db+"})", "{{replica}} as the primary sees it"))).
		WithPanel(graph("Replicas streaming", "short", "1 while a replica receives changes from its primary.",
			query("max by (pod) (mooring_db_replication_streaming{"+db+"})", "{{pod}}"))).
		WithPanel(graph("WAL kept by slots", "bytes", "PostgreSQL: WAL each replication slot keeps on the primary's volume; an inactive slot that grows belongs to a replica that is gone.",
			query("max by (slot) (mooring_db_replication_slot_retained_bytes{"+db+"})", "{{slot}}"))).
		WithRow(dashboard.NewRowBuilder("Load")).
		WithPanel(graph("Connections", "short", "Client connections of each instance, and its max_connections.",
			query("max by (pod) (mooring_db_connections{"+db+"})", "{{pod}}"),
			query("max(mooring_db_max_connections{"+db+"})", "max_connections"))).
		WithPanel(graph("Transactions per second", "ops", "Transactions committed and rolled back per second, by instance.",
			query("sum by (pod) ("+rate("mooring_db_transactions_committed_total{"+db+"}")+")", "{{pod}} committed"),
			query("sum by (pod) ("+rate("mooring_db_transactions_rolled_back_total{"+db+"}")+")", "{{pod}} rolled back"))).
		WithRow(dashboard.NewRowBuilder("Storage")).
		WithPanel(graph("Database sizes", "bytes", "Size of each database on the primary.",
			query(`max by (database) (mooring_db_database_size_bytes{`+db+`} and on (namespace, pod) (mooring_db_role{role="primary"} == 1))`, "{{database}}"))).
		WithPanel(graph("WAL or binlog written", "Bps", "PostgreSQL: WAL written (primary) or replayed (replica) per second; MariaDB: binlog bytes written per second.",
			query("max by (pod) ("+rate("mooring_db_wal_written_bytes_total{"+db+"}")+")", "{{pod}} WAL"),
			query("max by (pod) ("+rate("mooring_db_binlog_written_bytes_total{"+db+"}")+")", "{{pod}} binlog"))).
		WithPanel(graph("Binary logs kept", "bytes", "MariaDB/MySQL: binary logs on each instance's volume.",
			query("max by (pod) (mooring_db_binlog_size_bytes{"+db+"})", "{{pod}}"))).
		WithPanel(graph("Volume free", "bytes", "Bytes left on each instance's data volume; the server stops at 16 MiB.",
			query("max by (pod) (mooring_db_volume_available_bytes{"+db+"})", "{{pod}}"))).
		Build()
}
