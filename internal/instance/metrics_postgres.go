package instance

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lib/pq"
)

// postgresMetrics samples PostgreSQL over the private socket as the superuser, the
// manager's own local login, on one connection kept open: a scrape starts no backend
// and no login. One statement answers everything, as one JSON row.
type postgresMetrics struct {
	db *sql.DB
}

func newPostgresMetrics(p *postgres) *postgresMetrics {
	dsn := fmt.Sprintf("host=%s port=%d user=%s dbname=postgres sslmode=disable connect_timeout=5 statement_timeout=3000 application_name=mooring-metrics",
		quoteDSN(p.socketDir()), p.cfg.Port, pgSuperuser)
	connector, err := pq.NewConnector(dsn)
	if err != nil {
		// Only a malformed DSN fails here, and every part of it is Mooring's.
		panic(fmt.Sprintf("metrics DSN: %v", err))
	}
	return &postgresMetrics{db: keepOneConnection(sql.OpenDB(connector))}
}

// quoteDSN quotes a libpq connection-string value.
func quoteDSN(s string) string {
	return "'" + pgDSNEscaper.Replace(s) + "'"
}

var pgDSNEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

// postgresMetricsSQL is the round. The replica-only and primary-only parts sit behind
// pg_is_in_recovery(), since pg_current_wal_lsn() fails during recovery; a CASE runs only
// its chosen branch's subquery. The session's statement_timeout keeps a stuck catalog
// from holding the one connection.
const postgresMetricsSQL = `SELECT json_build_object(
  'replica', pg_is_in_recovery(),
  'connections', (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'),
  'max_connections', current_setting('max_connections')::int,
  'committed', (SELECT coalesce(sum(xact_commit), 0) FROM pg_stat_database),
  'rolled_back', (SELECT coalesce(sum(xact_rollback), 0) FROM pg_stat_database),
  'sizes', (SELECT coalesce(json_object_agg(datname, pg_database_size(oid)), '{}') FROM pg_database WHERE datallowconn AND NOT datistemplate),
  'wal', CASE WHEN pg_is_in_recovery() THEN (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint
              ELSE (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint END,
  'streaming', CASE WHEN pg_is_in_recovery() THEN coalesce((SELECT status = 'streaming' FROM pg_stat_wal_receiver), false) END,
  'lag_seconds', CASE WHEN pg_is_in_recovery() THEN
      CASE WHEN pg_last_wal_receive_lsn() IS NULL OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0
           ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END END,
  'lag_bytes', CASE WHEN pg_is_in_recovery() THEN
      greatest(coalesce((pg_last_wal_receive_lsn() - pg_last_wal_replay_lsn())::bigint, 0), 0) END,
  'replicas', CASE WHEN NOT pg_is_in_recovery() THEN (SELECT coalesce(json_agg(json_build_object(
      'name', application_name,
      'lag_bytes', coalesce((pg_current_wal_lsn() - replay_lsn)::bigint, (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint),
      'lag_seconds', extract(epoch FROM replay_lag))), '[]') FROM pg_stat_replication) END,
  'slots', CASE WHEN NOT pg_is_in_recovery() THEN (SELECT coalesce(json_agg(json_build_object(
      'name', slot_name, 'active', active,
      'retained', (pg_current_wal_lsn() - restart_lsn)::bigint)), '[]') FROM pg_replication_slots) END
)`

// postgresRound is postgresMetricsSQL's answer.
type postgresRound struct {
	Replica        bool               `json:"replica"`
	Connections    float64            `json:"connections"`
	MaxConnections float64            `json:"max_connections"`
	Committed      float64            `json:"committed"`
	RolledBack     float64            `json:"rolled_back"`
	Sizes          map[string]float64 `json:"sizes"`
	WAL            *float64           `json:"wal"`
	Streaming      *bool              `json:"streaming"`
	LagSeconds     *float64           `json:"lag_seconds"`
	LagBytes       *float64           `json:"lag_bytes"`
	Replicas       []struct {
		Name       string   `json:"name"`
		LagBytes   float64  `json:"lag_bytes"`
		LagSeconds *float64 `json:"lag_seconds"`
	} `json:"replicas"`
	Slots []struct {
		Name     string   `json:"name"`
		Active   bool     `json:"active"`
		Retained *float64 `json:"retained"`
	} `json:"slots"`
}

func (pm *postgresMetrics) sample(ctx context.Context) (dbSample, error) {
	var raw []byte
	if err := pm.db.QueryRowContext(ctx, postgresMetricsSQL).Scan(&raw); err != nil {
		return dbSample{}, fmt.Errorf("PostgreSQL metrics query: %w", err)
	}
	var r postgresRound
	if err := json.Unmarshal(raw, &r); err != nil {
		return dbSample{}, fmt.Errorf("PostgreSQL metrics answer %q: %w", truncate(string(raw), 200), err)
	}
	s := dbSample{
		role: RolePrimary, connections: r.Connections, maxConnections: r.MaxConnections,
		committed: r.Committed, rolledBack: r.RolledBack, databaseSizes: r.Sizes, walBytes: r.WAL,
		streaming: r.Streaming, lagSeconds: r.LagSeconds, lagBytes: r.LagBytes,
	}
	if r.Replica {
		s.role = RoleReplica
	}
	for _, x := range r.Replicas {
		s.replicas = append(s.replicas, replicaLag{name: x.Name, lagBytes: x.LagBytes, lagSeconds: x.LagSeconds})
	}
	for _, x := range r.Slots {
		s.slots = append(s.slots, slotRetention{name: x.Name, active: x.Active, retained: x.Retained})
	}
	return s, nil
}

func (pm *postgresMetrics) Close() error { return pm.db.Close() }
