package database

import (
	"fmt"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// engineSpec is what differs between PostgreSQL and MySQL.
type engineSpec struct {
	port      int32
	dataPath  string
	user      string // the application user created in the generated Secret
	runScript string // shell run by the container: picks the role, then execs the entrypoint
	// env names the image reads, with where their values come from
	userEnv, passwordEnv, replUserEnv, replPasswordEnv, extraPasswordEnv string
	// primaryPasswordEnv is the variable a replica reads the primary's admin password from.
	primaryPasswordEnv string
	// readyScript exits 0 when the server answers queries (not merely accepts TCP);
	// aliveScript exits 0 while the server process answers at all, even while it refuses
	// queries (recovery, an upgrade), so that liveness never kills a server at work.
	// Both connect to 127.0.0.1 and take any credential from the environment.
	readyScript, aliveScript string
}

var engines = map[v1beta1.DatabaseEngine]engineSpec{
	v1beta1.PostgreSQL: {
		port: 5432, dataPath: "/bitnami/postgresql", user: "app",
		userEnv: "POSTGRESQL_USERNAME", passwordEnv: "POSTGRESQL_PASSWORD",
		replUserEnv: "POSTGRESQL_REPLICATION_USER", replPasswordEnv: "POSTGRESQL_REPLICATION_PASSWORD",
		extraPasswordEnv: "POSTGRESQL_POSTGRES_PASSWORD",
		runScript: `if [ "$POD_INDEX" = "0" ]; then export POSTGRESQL_REPLICATION_MODE=master;
else export POSTGRESQL_REPLICATION_MODE=slave POSTGRESQL_MASTER_HOST="$PRIMARY_HOST"; fi
exec /opt/bitnami/scripts/postgresql/entrypoint.sh /opt/bitnami/scripts/postgresql/run.sh`,
		// pg_isready needs no password: it reports whether the server accepts connections
		// (0), rejects them while it starts or recovers (1) or does not answer (2). Ready
		// needs 0; alive is 0 or 1.
		readyScript: `exec pg_isready --host=127.0.0.1 --port=5432 --username=postgres --dbname=postgres --timeout=5 --quiet`,
		aliveScript: `pg_isready --host=127.0.0.1 --port=5432 --username=postgres --dbname=postgres --timeout=5 --quiet; [ "$?" -le 1 ]`,
	},
	v1beta1.MySQL: {
		port: 3306, dataPath: "/bitnami/mysql", user: "app",
		userEnv: "MYSQL_USER", passwordEnv: "MYSQL_PASSWORD",
		replUserEnv: "MYSQL_REPLICATION_USER", replPasswordEnv: "MYSQL_REPLICATION_PASSWORD",
		extraPasswordEnv: "MYSQL_ROOT_PASSWORD", primaryPasswordEnv: "MYSQL_MASTER_ROOT_PASSWORD",
		runScript: `if [ "$POD_INDEX" = "0" ]; then export MYSQL_REPLICATION_MODE=master;
else export MYSQL_REPLICATION_MODE=slave MYSQL_MASTER_HOST="$PRIMARY_HOST"; fi
exec /opt/bitnami/scripts/mysql/entrypoint.sh /opt/bitnami/scripts/mysql/run.sh`,
		// mysqld listens only once recovery and an in-place upgrade are done, so a ping
		// that answers means the server takes queries. It pings the pod's address: the
		// image's set-up (first initialisation, mysql_upgrade at every start) runs a
		// temporary server bound to 127.0.0.1, which would answer a ping on localhost
		// while clients cannot connect. The password reaches mysqladmin through
		// MYSQL_PWD, never its arguments (visible in the process list).
		readyScript: mysqlPing,
		aliveScript: mysqlPing,
	},
}

const mysqlPing = `export MYSQL_PWD="$MYSQL_ROOT_PASSWORD"
exec mysqladmin ping --host="$POD_IP" --port=3306 --user=root --connect-timeout=5 --silent`

func engineFor(db *v1beta1.DatabaseCluster) (engineSpec, error) {
	e, ok := engines[db.Spec.Engine]
	if !ok {
		return engineSpec{}, fmt.Errorf("unknown engine %q", db.Spec.Engine)
	}
	return e, nil
}

// Port is the port clients connect to for the cluster's engine.
func Port(db *v1beta1.DatabaseCluster) int32 { return engines[db.Spec.Engine].port }
