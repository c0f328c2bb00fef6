package instance

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mariadbMetrics samples MariaDB or MySQL over the private socket as the local
// administrator the manager itself logs in as (MariaDB: the OS user, by unix_socket,
// no password; MySQL: root with the admin Secret's password, read at each connect), on
// one connection kept open. The round is one multi-statement request: the client sends
// it at once and reads the result sets in turn.
type mariadbMetrics struct {
	m  *mariadb
	db *sql.DB
}

func newMariaDBMetrics(m *mariadb) *mariadbMetrics {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "unix", m.socket()
	cfg.MultiStatements = true
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 5*time.Second, metricsQueryTimeout, metricsQueryTimeout
	_ = cfg.Apply(mysql.BeforeConnect(func(_ context.Context, c *mysql.Config) error {
		if m.d.mysql {
			pw, err := m.cfg.AdminPassword()
			if err != nil {
				return err
			}
			c.User, c.Passwd = mysqlRoot, pw
			return nil
		}
		name, err := localAdminName()
		c.User = name
		return err
	}))
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		// Only a configuration the driver refuses fails here, and it is all Mooring's.
		panic(fmt.Sprintf("metrics connector: %v", err))
	}
	return &mariadbMetrics{m: m, db: keepOneConnection(sql.OpenDB(connector))}
}

// mariadbMetricsSQL is the round, in the order sample reads the result sets. The
// statements work alike on MariaDB 10.5+ and MySQL 8.0.22+; SHOW BINARY LOGS comes last
// since it is the one that may fail (binary logging off, if a user turned it off).
const mariadbMetricsSQL = `SELECT @@global.read_only AS read_only, @@global.max_connections AS max_connections;
SELECT s.schema_name AS name, COALESCE(SUM(t.data_length + t.index_length), 0) AS size
  FROM information_schema.schemata s LEFT JOIN information_schema.tables t ON t.table_schema = s.schema_name
  WHERE s.schema_name NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
  GROUP BY s.schema_name;
SHOW GLOBAL STATUS WHERE Variable_name IN ('Threads_connected', 'Handler_commit', 'Handler_rollback', 'Binlog_bytes_written');
SHOW REPLICA STATUS;
SHOW BINARY LOGS`

// The columns of SHOW REPLICA STATUS the lag is read from, under MariaDB's and MySQL's
// names.
var (
	secondsBehindColumns = []string{"Seconds_Behind_Master", "Seconds_Behind_Source"}
	readPosColumns       = []string{"Read_Master_Log_Pos", "Read_Source_Log_Pos"}
	execPosColumns       = []string{"Exec_Master_Log_Pos", "Exec_Source_Log_Pos"}
	readFileColumns      = []string{"Master_Log_File", "Source_Log_File"}
	execFileColumns      = []string{"Relay_Master_Log_File", "Relay_Source_Log_File"}
)

func (mm *mariadbMetrics) sample(ctx context.Context) (dbSample, error) {
	rows, err := mm.db.QueryContext(ctx, mariadbMetricsSQL)
	if err != nil {
		return dbSample{}, fmt.Errorf("%s metrics query: %w", mm.m.d.name, err)
	}
	defer rows.Close() //nolint:errcheck // read only
	var sets [][]map[string]string
	for {
		set, err := readSet(rows)
		if err != nil {
			return dbSample{}, fmt.Errorf("%s metrics query, result %d: %w", mm.m.d.name, len(sets)+1, err)
		}
		sets = append(sets, set)
		if !rows.NextResultSet() {
			break
		}
	}
	// A failed SHOW BINARY LOGS, the last, ends the sets early; the others are complete.
	if err := rows.Err(); err != nil && len(sets) < 4 {
		return dbSample{}, fmt.Errorf("%s metrics query, result %d: %w", mm.m.d.name, len(sets)+1, err)
	}
	return mm.m.d.metricsSample(sets), nil
}

// readSet reads the current result set as rows of column name to value (NULL as "NULL",
// as the client shows it).
func readSet(rows *sql.Rows) ([]map[string]string, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(map[string]string, len(cols))
		for i, c := range cols {
			row[c] = "NULL"
			if vals[i].Valid {
				row[c] = vals[i].String
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// metricsSample makes a sample of the round's result sets: the variables, the schemas'
// sizes, the status counters, the replica status (no row on a primary) and the binary
// logs (missing when binary logging is off).
func (d *dialect) metricsSample(sets [][]map[string]string) dbSample {
	set := func(i int) []map[string]string {
		if i < len(sets) {
			return sets[i]
		}
		return nil
	}
	vars := map[string]string{}
	if v := set(0); len(v) > 0 {
		vars = v[0]
	}
	replica := map[string]string{}
	if r := set(3); len(r) > 0 {
		replica = r[0]
	}
	o := d.observation(vars, replica)
	s := dbSample{role: o.Role, maxConnections: number(vars["max_connections"]), databaseSizes: map[string]float64{}}
	for _, row := range set(1) {
		s.databaseSizes[row["name"]] = number(row["size"])
	}
	status := map[string]string{}
	for _, row := range set(2) {
		status[row["Variable_name"]] = row["Value"]
	}
	s.connections = number(status["Threads_connected"])
	s.committed, s.rolledBack = number(status["Handler_commit"]), number(status["Handler_rollback"])
	if v, ok := status["Binlog_bytes_written"]; ok {
		s.binlogWritten = ptr(number(v))
	}
	if len(sets) > 4 {
		var total float64
		for _, row := range sets[4] {
			total += number(row["File_size"])
		}
		s.binlogSize = &total
	}
	if len(replica) > 0 {
		s.streaming = &o.Streaming
		if v := column(replica, secondsBehindColumns); v != "" && v != "NULL" {
			s.lagSeconds = ptr(number(v))
		}
		if f := column(replica, readFileColumns); f != "" && f == column(replica, execFileColumns) {
			s.lagBytes = ptr(max(number(column(replica, readPosColumns))-number(column(replica, execPosColumns)), 0))
		}
	}
	return s
}

// number is v as a float, 0 when it is none.
func number(v string) float64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	return f
}

func ptr[T any](v T) *T { return &v }

func (mm *mariadbMetrics) Close() error { return mm.db.Close() }
