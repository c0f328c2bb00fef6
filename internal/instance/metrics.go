package instance

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"net/http"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The database metrics: a stand-in for postgres_exporter's and mysqld_exporter's core
// series, served by the instance manager on /metrics beside /status, so a database pod
// needs no exporter container. Every series has the same name for every engine (the
// alerts and the dashboard need one query); the scraper adds the pod, namespace and
// cluster labels (the PodMonitor of config/prometheus). docs/database-metrics.md lists
// them with their sources.
const (
	// metricsCacheFor is how long one query round answers scrapes: two Prometheus
	// servers, or one with a short interval, cost the database one round a second at most.
	metricsCacheFor = time.Second
	// metricsQueryTimeout bounds a round; a server that does not answer in time is down.
	metricsQueryTimeout = 4 * time.Second
)

// dbSample is what one query round learnt. Fields an engine does not have, or that do
// not apply to the instance's role, stay nil and their series are left out.
type dbSample struct {
	role string
	// Connections in use (client sessions) and the server's limit.
	connections, maxConnections float64
	// Transactions committed and rolled back since the server started (the counters'
	// resets are Prometheus's to handle).
	committed, rolledBack float64
	// databaseSizes are the bytes of each database (PostgreSQL) or schema (MariaDB/MySQL).
	databaseSizes map[string]float64
	// walBytes is the WAL position in bytes (PostgreSQL): written on the primary,
	// replayed on a replica. binlogWritten is MariaDB's Binlog_bytes_written.
	walBytes, binlogWritten *float64
	// binlogSize is the bytes of the binary logs on disk (MariaDB/MySQL).
	binlogSize *float64
	// A replica's view of its replication: streaming now, how far behind what it
	// applied is in seconds, and the bytes it received but has not applied.
	streaming            *bool
	lagSeconds, lagBytes *float64
	replicas             []replicaLag
	slots                []slotRetention
}

// replicaLag is a replica as the primary sees it (PostgreSQL's pg_stat_replication).
type replicaLag struct {
	name       string
	lagBytes   float64
	lagSeconds *float64
}

// slotRetention is a replication slot and the WAL it keeps on the primary.
type slotRetention struct {
	name     string
	active   bool
	retained *float64
}

// metricsSource runs one query round over a connection it keeps open.
type metricsSource interface {
	sample(ctx context.Context) (dbSample, error)
	Close() error
}

var (
	upDesc = prometheus.NewDesc("mooring_db_up",
		"1 when the instance manager's last query round succeeded, 0 when the server is not running, not yet set up, or does not answer (pg_up, mysql_up).",
		[]string{"engine"}, nil)
	roleDesc = prometheus.NewDesc("mooring_db_role",
		"The role the server reports, as a state set: 1 for the current one (primary: PostgreSQL not in recovery, MariaDB/MySQL not read-only without a source; replica otherwise).",
		[]string{"role"}, nil)
	connectionsDesc = prometheus.NewDesc("mooring_db_connections",
		"Client connections open now (PostgreSQL: client backends in pg_stat_activity; MariaDB/MySQL: Threads_connected).",
		nil, nil)
	maxConnectionsDesc = prometheus.NewDesc("mooring_db_max_connections",
		"The server's max_connections.", nil, nil)
	committedDesc = prometheus.NewDesc("mooring_db_transactions_committed_total",
		"Transactions committed (PostgreSQL: pg_stat_database xact_commit summed over databases; MariaDB/MySQL: Handler_commit, storage-engine commits including autocommitted statements).",
		nil, nil)
	rolledBackDesc = prometheus.NewDesc("mooring_db_transactions_rolled_back_total",
		"Transactions rolled back (PostgreSQL: xact_rollback summed; MariaDB/MySQL: Handler_rollback).",
		nil, nil)
	databaseSizeDesc = prometheus.NewDesc("mooring_db_database_size_bytes",
		"Size of each database (PostgreSQL: pg_database_size; MariaDB/MySQL: data and index length of the schema's tables; system schemas left out).",
		[]string{"database"}, nil)
	walDesc = prometheus.NewDesc("mooring_db_wal_written_bytes_total",
		"PostgreSQL: the WAL position in bytes since the cluster was initialised, written on the primary (pg_current_wal_lsn), replayed on a replica (pg_last_wal_replay_lsn); its rate is the WAL written or applied per second.",
		nil, nil)
	binlogWrittenDesc = prometheus.NewDesc("mooring_db_binlog_written_bytes_total",
		"MariaDB: bytes written to the binary log since the server started (Binlog_bytes_written; MySQL has no such counter).",
		nil, nil)
	binlogSizeDesc = prometheus.NewDesc("mooring_db_binlog_size_bytes",
		"MariaDB/MySQL: bytes of the binary logs kept on disk (SHOW BINARY LOGS), what the volume holds for replicas and point-in-time recovery.",
		nil, nil)
	streamingDesc = prometheus.NewDesc("mooring_db_replication_streaming",
		"On a replica: 1 while it receives and applies the primary's changes (PostgreSQL: the WAL receiver streams; MariaDB/MySQL: both replication threads run), else 0.",
		nil, nil)
	lagSecondsDesc = prometheus.NewDesc("mooring_db_replication_lag_seconds",
		"On a replica: how far behind the primary what it applied is, in seconds (PostgreSQL: now minus the last replayed transaction's time, 0 when all it received is applied, as postgres_exporter's pg_replication_lag; MariaDB/MySQL: Seconds_Behind_Master). Absent while the replica does not know (replication stopped).",
		nil, nil)
	lagBytesDesc = prometheus.NewDesc("mooring_db_replication_lag_bytes",
		"On a replica: bytes of the primary's WAL or binlog it received but has not applied yet (PostgreSQL: receive minus replay LSN; MariaDB/MySQL: Read minus Exec_Master_Log_Pos while both are in one binlog file).",
		nil, nil)
	replicaLagBytesDesc = prometheus.NewDesc("mooring_db_replica_lag_bytes",
		"PostgreSQL, on the primary: how many bytes of WAL each connected replica has still to replay (pg_stat_replication: current LSN minus replay_lsn).",
		[]string{"replica"}, nil)
	replicaLagSecondsDesc = prometheus.NewDesc("mooring_db_replica_lag_seconds",
		"PostgreSQL, on the primary: each connected replica's replay_lag from pg_stat_replication; absent while the primary has not measured one.",
		[]string{"replica"}, nil)
	slotRetainedDesc = prometheus.NewDesc("mooring_db_replication_slot_retained_bytes",
		"PostgreSQL, on the primary: WAL bytes each replication slot keeps on the volume (current LSN minus the slot's restart_lsn), as postgres_exporter's pg_replication_slots_pg_wal_lsn_diff. A slot of a replica that is gone keeps WAL until the volume is full.",
		[]string{"slot"}, nil)
	slotActiveDesc = prometheus.NewDesc("mooring_db_replication_slot_active",
		"PostgreSQL, on the primary: 1 while a replica uses the slot, else 0.",
		[]string{"slot"}, nil)
	volumeSizeDesc = prometheus.NewDesc("mooring_db_volume_size_bytes",
		"Size of the data volume's filesystem (statfs of the data directory), reported whether or not the server runs.",
		nil, nil)
	volumeAvailableDesc = prometheus.NewDesc("mooring_db_volume_available_bytes",
		"Bytes of the data volume the server may still write (statfs's available blocks); the manager keeps the server down below 16 MiB.",
		nil, nil)
	scrapeDurationDesc = prometheus.NewDesc("mooring_db_scrape_duration_seconds",
		"How long the last query round took.", nil, nil)
)

// dbCollector is the prometheus.Collector of the database metrics: one query round per
// metricsCacheFor at most, over one connection kept open by the source.
type dbCollector struct {
	engine string
	// dataDir is the data volume's mount, whose filesystem's use is reported.
	dataDir string
	// ready says whether the server runs and is set up; before, the collector does not
	// connect and reports mooring_db_up 0.
	ready  func() bool
	source metricsSource
	log    *log.Logger
	// now is the clock of the cache; tests move it.
	now func() time.Time

	mu       sync.Mutex
	at       time.Time
	last     dbSample
	lastErr  error
	took     time.Duration
	reported string // the last error logged, so a lasting one is logged once
}

func newDBCollector(engine, dataDir string, source metricsSource, ready func() bool, logger *log.Logger) *dbCollector {
	return &dbCollector{engine: engine, dataDir: dataDir, ready: ready, source: source, log: logger, now: time.Now}
}

// Describe sends every descriptor the collector may emit.
func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upDesc, roleDesc, connectionsDesc, maxConnectionsDesc, committedDesc,
		rolledBackDesc, databaseSizeDesc, walDesc, binlogWrittenDesc, binlogSizeDesc, streamingDesc, lagSecondsDesc,
		lagBytesDesc, replicaLagBytesDesc, replicaLagSecondsDesc, slotRetainedDesc, slotActiveDesc, volumeSizeDesc, volumeAvailableDesc, scrapeDurationDesc} {
		ch <- d
	}
}

// current is the cached sample, or a new one when the cache is older than
// metricsCacheFor. Concurrent scrapes wait for one round rather than start their own.
func (c *dbCollector) current() (dbSample, time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready() {
		c.at = time.Time{}
		return dbSample{}, 0, errNotReady
	}
	if !c.at.IsZero() && c.now().Sub(c.at) < metricsCacheFor {
		return c.last, c.took, c.lastErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), metricsQueryTimeout)
	defer cancel()
	start := time.Now()
	c.last, c.lastErr = c.source.sample(ctx)
	c.took, c.at = time.Since(start), c.now()
	if msg := errText(c.lastErr); msg != c.reported {
		if c.lastErr != nil {
			c.log.Printf("metrics: query round failed: %v", c.lastErr)
		} else {
			c.log.Printf("metrics: query rounds succeed again")
		}
		c.reported = msg
	}
	return c.last, c.took, c.lastErr
}

// errNotReady stands for a round not run: the server is down or being set up.
var errNotReady = errors.New("the server is not running or not set up yet")

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Collect runs (or reuses) a query round and emits its series.
func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	s, took, err := c.current()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	// The volume is reported even while the server is down: a full volume keeps it down.
	var fs syscall.Statfs_t
	if c.dataDir != "" && syscall.Statfs(c.dataDir, &fs) == nil {
		gauge(volumeSizeDesc, float64(fs.Blocks)*float64(fs.Bsize))
		gauge(volumeAvailableDesc, float64(fs.Bavail)*float64(fs.Bsize))
	}
	if err != nil {
		gauge(upDesc, 0, c.engine)
		return
	}
	gauge(upDesc, 1, c.engine)
	gauge(scrapeDurationDesc, took.Seconds())
	for _, r := range []string{RolePrimary, RoleReplica} {
		gauge(roleDesc, boolValue(s.role == r), r)
	}
	gauge(connectionsDesc, s.connections)
	gauge(maxConnectionsDesc, s.maxConnections)
	counter(committedDesc, s.committed)
	counter(rolledBackDesc, s.rolledBack)
	for db, size := range s.databaseSizes {
		gauge(databaseSizeDesc, size, db)
	}
	if s.walBytes != nil {
		counter(walDesc, *s.walBytes)
	}
	if s.binlogWritten != nil {
		counter(binlogWrittenDesc, *s.binlogWritten)
	}
	if s.binlogSize != nil {
		gauge(binlogSizeDesc, *s.binlogSize)
	}
	if s.streaming != nil {
		gauge(streamingDesc, boolValue(*s.streaming))
	}
	if s.lagSeconds != nil {
		gauge(lagSecondsDesc, *s.lagSeconds)
	}
	if s.lagBytes != nil {
		gauge(lagBytesDesc, *s.lagBytes)
	}
	for _, r := range s.replicas {
		gauge(replicaLagBytesDesc, r.lagBytes, r.name)
		if r.lagSeconds != nil {
			gauge(replicaLagSecondsDesc, *r.lagSeconds, r.name)
		}
	}
	for _, sl := range s.slots {
		gauge(slotActiveDesc, boolValue(sl.active), sl.name)
		if sl.retained != nil {
			gauge(slotRetainedDesc, *sl.retained, sl.name)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// newMetricsSource is the source of e's engine.
func newMetricsSource(e Engine) metricsSource {
	switch e := e.(type) {
	case *postgres:
		return newPostgresMetrics(e)
	case *mariadb:
		return newMariaDBMetrics(e)
	}
	return nil
}

// metricsHandler serves /metrics for c from a registry of its own: only the database's
// series, none of the Go runtime's.
func metricsHandler(c prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// withMetrics serves /metrics from the manager's engine beside the handler of the
// probes and /status, on the same port: the metrics carry no secret and need no token,
// whatever /status asks of its callers. It returns the handler and what closes the
// collector's connection.
func (m *manager) withMetrics(next http.Handler) (http.Handler, func()) {
	source := newMetricsSource(m.engine)
	if source == nil {
		return next, func() {}
	}
	c := newDBCollector(m.cfg.Engine, m.cfg.DataDir, source, func() bool { return m.configured.Load() && m.st.get().Running }, m.log)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(c))
	mux.Handle("/", next)
	return mux, func() { _ = source.Close() }
}

// keepOneConnection makes db hold a single connection open between rounds, so a scrape
// opens no new session (and no new superuser login) while the server stays up.
func keepOneConnection(db *sql.DB) *sql.DB {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db
}

// MetricNames are the names of every series /metrics may serve, for the tests that check
// alerts and dashboards use only metrics something exports.
func MetricNames() []string {
	ch := make(chan *prometheus.Desc, 64)
	(&dbCollector{}).Describe(ch)
	close(ch)
	var names []string
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// descName finds a Desc's name in its String(), the only place client_golang shows it.
var descName = regexp.MustCompile(`fqName: "([^"]+)"`)
