package instance

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var anyValue = math.NaN()

// metricsURL is the manager's /metrics, beside /status.
func (p *proc) metricsURL() string { return "http://" + p.statusAddr + "/metrics" }

// waitSeries polls p's /metrics until check accepts a scrape, and returns it.
func (p *proc) waitSeries(t *testing.T, what string, check func(series) error) series {
	t.Helper()
	var last series
	eventually(t, time.Minute, what, func() error {
		s, err := scrapeMetrics(p.metricsURL())
		if err != nil {
			return err
		}
		last = s
		if err := check(s); err != nil {
			return fmt.Errorf("%w\nin the scrape:\n%s", err, s)
		}
		return nil
	})
	return last
}

// runDirs makes an instance's data and run directories, owned by u.
func runDirs(t *testing.T, u osUser, base string, i int) string {
	t.Helper()
	d := filepath.Join(base, "data-"+strconv.Itoa(i))
	for _, dir := range []string{d, d + "-run"} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestPostgreSQLMetrics runs a primary and a replica and reads their /metrics: up, the
// role of each, the replica's lag and streaming, the primary's view of the replica and
// of its slot, connections, transactions that grow with the application's writes,
// database sizes and WAL; and the rounds use one connection the manager keeps, not a
// new session per scrape.
func TestPostgreSQLMetrics(t *testing.T) {
	bin, major := pgBin(t)
	u := serverUser(t, "postgres")
	self := selfCopy(t, u)
	const admin, appPassword = "metrics-admin-pw", "metrics-app-pw"
	adminDir := secretDir(t, u, map[string]string{"username": "postgres", "password": admin})
	appDir := secretDir(t, u, map[string]string{"username": "app", "password": appPassword})
	base := ownedDir(t, u)
	mk := func(i int) pgInstance {
		// The test reads pg_stat_activity as postgres over TCP.
		return pgInstance{index: i, port: freePort(t), dataDir: runDirs(t, u, base, i), adminSecret: adminDir, appSecret: appDir, superuserAccess: true}
	}
	primary, replica := mk(0), mk(1)
	p := startManager(t, self, u, primary.args(major, primary.port)...)
	p.waitReady(t, 2*time.Minute)

	before := p.waitSeries(t, "the primary's metrics", func(s series) error {
		if err := s.has(map[string]float64{`mooring_db_up{engine="postgresql"}`: 1, `mooring_db_role{role="primary"}`: 1,
			`mooring_db_role{role="replica"}`: 0, `mooring_db_max_connections`: anyValue, `mooring_db_connections`: anyValue,
			`mooring_db_transactions_committed_total`: anyValue, `mooring_db_database_size_bytes{database="postgres"}`: anyValue,
			`mooring_db_wal_written_bytes_total`: anyValue, `mooring_db_volume_size_bytes`: anyValue,
			`mooring_db_volume_available_bytes`: anyValue}); err != nil {
			return err
		}
		if s[`mooring_db_volume_available_bytes`] <= 0 || s[`mooring_db_volume_available_bytes`] > s[`mooring_db_volume_size_bytes`] {
			return fmt.Errorf("volume available %v of %v bytes", s[`mooring_db_volume_available_bytes`], s[`mooring_db_volume_size_bytes`])
		}
		if s[`mooring_db_max_connections`] < 1 || s[`mooring_db_connections`] > s[`mooring_db_max_connections`] {
			return fmt.Errorf("%v connections of %v", s[`mooring_db_connections`], s[`mooring_db_max_connections`])
		}
		if s[`mooring_db_database_size_bytes{database="postgres"}`] < 1<<20 || s[`mooring_db_wal_written_bytes_total`] <= 0 {
			return fmt.Errorf("database size %v, WAL %v: want a database of a MiB or more and WAL written",
				s[`mooring_db_database_size_bytes{database="postgres"}`], s[`mooring_db_wal_written_bytes_total`])
		}
		return nil
	})
	metricsBackends := func() string {
		t.Helper()
		out, err := psqlAs(t, bin, primary.port, "postgres", admin,
			"SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE application_name = 'mooring-metrics'")
		if err != nil {
			t.Fatalf("pg_stat_activity: %v: %s", err, out)
		}
		return out
	}
	backend := metricsBackends()
	if backend == "" || strings.Contains(backend, ",") {
		t.Fatalf("metrics sessions %q, want one", backend)
	}

	if out, err := psqlAs(t, bin, primary.port, "app", appPassword,
		"CREATE TABLE orders (id int PRIMARY KEY, item text); INSERT INTO orders SELECT g, 'rope' FROM generate_series(1, 20000) g;"); err != nil {
		t.Fatalf("write on the primary: %v: %s", err, out)
	}
	for i := range 5 {
		if out, err := psqlAs(t, bin, primary.port, "app", appPassword, "BEGIN; INSERT INTO orders VALUES ("+strconv.Itoa(30000+i)+", 'x'); ROLLBACK;"); err != nil {
			t.Fatalf("rolled-back write: %v: %s", err, out)
		}
	}
	p.waitSeries(t, "transactions, rollbacks, WAL and size to grow with the writes", func(s series) error {
		for _, k := range []string{`mooring_db_transactions_committed_total`, `mooring_db_wal_written_bytes_total`, `mooring_db_database_size_bytes{database="postgres"}`} {
			if s[k] <= before[k] {
				return fmt.Errorf("%s is %v, was %v before the writes", k, s[k], before[k])
			}
		}
		if got := s[`mooring_db_transactions_rolled_back_total`] - before[`mooring_db_transactions_rolled_back_total`]; got < 5 {
			return fmt.Errorf("rolled back %v since, want 5 or more", got)
		}
		return nil
	})
	if now := metricsBackends(); now != backend {
		t.Errorf("metrics sessions were %q and are %q after more rounds: want the same one kept", backend, now)
	}

	r := startManager(t, self, u, replica.args(major, primary.port)...)
	r.waitReady(t, 2*time.Minute)
	r.waitSeries(t, "the replica's role and lag", func(s series) error {
		return s.has(map[string]float64{`mooring_db_up{engine="postgresql"}`: 1, `mooring_db_role{role="replica"}`: 1,
			`mooring_db_role{role="primary"}`: 0, `mooring_db_replication_streaming`: 1, `mooring_db_replication_lag_seconds`: anyValue,
			`mooring_db_replication_lag_bytes`: anyValue, `mooring_db_wal_written_bytes_total`: anyValue})
	})
	last := p.waitSeries(t, "the primary's view of the replica and its slot", func(s series) error {
		if _, ok := s[`mooring_db_replication_lag_seconds`]; ok {
			return fmt.Errorf("the primary reports a lag of its own")
		}
		return s.has(map[string]float64{`mooring_db_replica_lag_bytes{replica="db_1"}`: anyValue,
			`mooring_db_replication_slot_active{slot="db_1"}`: 1, `mooring_db_replication_slot_retained_bytes{slot="db_1"}`: anyValue})
	})
	t.Logf("PostgreSQL primary with a replica: a query round took %.1f ms", 1000*last[`mooring_db_scrape_duration_seconds`])
	for _, pr := range []*proc{p, r} {
		if strings.Contains(pr.log(), admin) || strings.Contains(pr.log(), appPassword) {
			t.Errorf("a password is in the manager's log:\n%s", pr.log())
		}
	}
}

// TestMariaDBMetrics is TestPostgreSQLMetrics for MariaDB: the primary's and the
// replica's roles, the replica's lag and streaming, binlog written and kept, schema
// sizes, transactions.
func TestMariaDBMetrics(t *testing.T) {
	client, release := mariadbOfMachine(t)
	u := serverUser(t, "mysql")
	self := selfCopy(t, u)
	const admin, appUser, appPassword = "metrics-admin-pw", "app", "metrics-app-pw"
	adminDir := secretDir(t, u, map[string]string{"username": "root", "password": admin})
	appDir := secretDir(t, u, map[string]string{"username": appUser, "password": appPassword})
	base := ownedDir(t, u)
	primaryPort := freePort(t)
	args := func(i, port int) []string {
		d := runDirs(t, u, base, i)
		a := []string{"--engine=mariadb", "--version=" + release, "--pod=db-" + strconv.Itoa(i), "--index=" + strconv.Itoa(i),
			"--port=" + strconv.Itoa(port), "--data-dir=" + d, "--run-dir=" + d + "-run",
			"--admin-secret-dir=" + adminDir, "--app-secret-dir=" + appDir}
		if i > 0 {
			a = append(a, "--primary-host=127.0.0.1", "--primary-port="+strconv.Itoa(primaryPort))
		}
		return a
	}
	p := startManager(t, self, u, args(0, primaryPort)...)
	p.waitReady(t, 2*time.Minute)
	before := p.waitSeries(t, "the primary's metrics", func(s series) error {
		return s.has(map[string]float64{`mooring_db_up{engine="mariadb"}`: 1, `mooring_db_role{role="primary"}`: 1,
			`mooring_db_role{role="replica"}`: 0, `mooring_db_max_connections`: anyValue, `mooring_db_connections`: anyValue,
			`mooring_db_transactions_committed_total`: anyValue, `mooring_db_database_size_bytes{database="app"}`: anyValue,
			`mooring_db_binlog_written_bytes_total`: anyValue, `mooring_db_binlog_size_bytes`: anyValue})
	})
	if out, err := mariadbAs(client, primaryPort, appUser, appPassword,
		"CREATE TABLE app.orders (id int PRIMARY KEY, item varchar(40)); INSERT INTO app.orders VALUES (1, 'rope'), (2, 'anchor');"+
			"BEGIN; INSERT INTO app.orders VALUES (3, 'x'); ROLLBACK;"); err != nil {
		t.Fatalf("write on the primary: %v: %s", err, out)
	}
	p.waitSeries(t, "transactions, rollbacks, binlog and size to grow with the writes", func(s series) error {
		for _, k := range []string{`mooring_db_transactions_committed_total`, `mooring_db_transactions_rolled_back_total`,
			`mooring_db_binlog_written_bytes_total`, `mooring_db_binlog_size_bytes`, `mooring_db_database_size_bytes{database="app"}`} {
			if s[k] <= before[k] {
				return fmt.Errorf("%s is %v, was %v before the writes", k, s[k], before[k])
			}
		}
		return nil
	})

	replicaPort := freePort(t)
	r := startManager(t, self, u, args(1, replicaPort)...)
	r.waitReady(t, 2*time.Minute)
	rs := r.waitSeries(t, "the replica's role and lag", func(s series) error {
		return s.has(map[string]float64{`mooring_db_up{engine="mariadb"}`: 1, `mooring_db_role{role="replica"}`: 1,
			`mooring_db_role{role="primary"}`: 0, `mooring_db_replication_streaming`: 1, `mooring_db_replication_lag_seconds`: 0,
			`mooring_db_replication_lag_bytes`: 0})
	})
	s, err := scrapeMetrics(p.metricsURL())
	if err != nil || s[`mooring_db_role{role="primary"}`] != 1 {
		t.Fatalf("the primary after the replica joined: %v\n%s", err, s)
	} else if _, ok := s[`mooring_db_replication_streaming`]; ok {
		t.Errorf("the primary reports replication of its own:\n%s", s)
	}
	t.Logf("MariaDB: a query round took %.1f ms on the primary, %.1f ms on the replica",
		1000*s[`mooring_db_scrape_duration_seconds`], 1000*rs[`mooring_db_scrape_duration_seconds`])
	for _, pr := range []*proc{p, r} {
		if strings.Contains(pr.log(), admin) || strings.Contains(pr.log(), appPassword) {
			t.Errorf("a password is in the manager's log:\n%s", pr.log())
		}
	}
}
