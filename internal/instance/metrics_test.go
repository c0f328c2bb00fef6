package instance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// series is a scrape of /metrics: each sample line's series ("name{labels}") and value.
type series map[string]float64

// scrapeMetrics reads url's Prometheus text.
func scrapeMetrics(url string) (series, error) {
	resp, err := httpc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close() //nolint:errcheck // read only
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: %d %s", url, resp.StatusCode, b)
	}
	return parseExposition(resp.Body)
}

func parseExposition(r io.Reader) (series, error) {
	out := series{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			return nil, fmt.Errorf("not a sample line: %q", line)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// has says whether every series of want is there with its value (NaN: any value).
func (s series) has(want map[string]float64) error {
	var missing []string
	for k, v := range want {
		got, ok := s[k]
		if !ok || (v == v && got != v) { //nolint:gocritic // v != v is NaN: any value
			missing = append(missing, fmt.Sprintf("%s %v (seen %v, present %v)", k, v, got, ok))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("want %s", strings.Join(missing, "; "))
	}
	return nil
}

func (s series) String() string {
	var b strings.Builder
	for k, v := range s {
		fmt.Fprintf(&b, "%s %v\n", k, v)
	}
	return b.String()
}

// countingSource answers every round with a sample whose committed count is the round's
// number.
type countingSource struct {
	rounds int
	err    error
}

func (c *countingSource) sample(context.Context) (dbSample, error) {
	c.rounds++
	return dbSample{role: RoleReplica, committed: float64(c.rounds)}, c.err
}

func (c *countingSource) Close() error { return nil }

// TestDBCollectorCache: scrapes within a second share one query round; a later scrape
// runs a new one; a server that is not ready is not asked and is reported down; a failed
// round is reported down.
func TestDBCollectorCache(t *testing.T) {
	src := &countingSource{}
	ready := true
	now := time.Unix(1_800_000_000, 0)
	c := newDBCollector("postgresql", "", src, func() bool { return ready }, log.New(io.Discard, "", 0))
	c.now = func() time.Time { return now }
	srv := httptest.NewServer(metricsHandler(c))
	defer srv.Close()
	scrape := func() series {
		t.Helper()
		s, err := scrapeMetrics(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for i := range 3 {
		s := scrape()
		if err := s.has(map[string]float64{`mooring_db_up{engine="postgresql"}`: 1, `mooring_db_transactions_committed_total`: 1,
			`mooring_db_role{role="replica"}`: 1, `mooring_db_role{role="primary"}`: 0}); err != nil {
			t.Fatalf("scrape %d within the second: %v\n%s", i+1, err, s)
		}
		now = now.Add(300 * time.Millisecond)
	}
	if src.rounds != 1 {
		t.Fatalf("3 scrapes within %s ran %d query rounds, want 1", metricsCacheFor, src.rounds)
	}
	now = now.Add(metricsCacheFor)
	if s := scrape(); s[`mooring_db_transactions_committed_total`] != 2 || src.rounds != 2 {
		t.Fatalf("a scrape after the cache expired: committed %v after %d rounds, want a second round", s[`mooring_db_transactions_committed_total`], src.rounds)
	}

	ready = false
	s := scrape()
	if err := s.has(map[string]float64{`mooring_db_up{engine="postgresql"}`: 0}); err != nil || len(s) != 1 || src.rounds != 2 {
		t.Fatalf("not ready: %v, %d series, %d rounds; want only mooring_db_up 0 and no round\n%s", err, len(s), src.rounds, s)
	}
	ready, src.err = true, errors.New("connection refused")
	if s := scrape(); s[`mooring_db_up{engine="postgresql"}`] != 0 || len(s) != 1 {
		t.Fatalf("a failed round: want only mooring_db_up 0\n%s", s)
	}
}

// TestMariaDBMetricsSample: the round's result sets as MariaDB and MySQL answer them
// become the sample: role, lag from the replica status, sizes, counters.
func TestMariaDBMetricsSample(t *testing.T) {
	vars := []map[string]string{{"read_only": "1", "max_connections": "151"}}
	sizes := []map[string]string{{"name": "app", "size": "32768"}}
	status := []map[string]string{{"Variable_name": "Threads_connected", "Value": "3"}, {"Variable_name": "Handler_commit", "Value": "42"},
		{"Variable_name": "Handler_rollback", "Value": "2"}, {"Variable_name": "Binlog_bytes_written", "Value": "1000"}}
	binlogs := []map[string]string{{"Log_name": "binlog.000001", "File_size": "400"}, {"Log_name": "binlog.000002", "File_size": "600"}}
	tests := map[string]struct {
		d    *dialect
		sets [][]map[string]string
		want func(s dbSample) error
	}{
		"MariaDB replica, behind": {&mariadbDialect, [][]map[string]string{vars, sizes, status, {{"Master_Host": "db-0", "Slave_IO_Running": "Yes",
			"Slave_SQL_Running": "Yes", "Seconds_Behind_Master": "7", "Master_Log_File": "binlog.000002", "Relay_Master_Log_File": "binlog.000002",
			"Read_Master_Log_Pos": "900", "Exec_Master_Log_Pos": "500"}}, binlogs}, func(s dbSample) error {
			if s.role != RoleReplica || s.streaming == nil || !*s.streaming || s.lagSeconds == nil || *s.lagSeconds != 7 ||
				s.lagBytes == nil || *s.lagBytes != 400 {
				return fmt.Errorf("role %s streaming %v lag %v s %v bytes, want replica streaming 7 s 400 bytes", s.role, deref(s.streaming), deref(s.lagSeconds), deref(s.lagBytes))
			}
			if s.connections != 3 || s.maxConnections != 151 || s.committed != 42 || s.rolledBack != 2 || s.databaseSizes["app"] != 32768 ||
				deref(s.binlogWritten) != 1000.0 || deref(s.binlogSize) != 1000.0 {
				return fmt.Errorf("counters %+v", s)
			}
			return nil
		}},
		"MySQL replica, stopped, relay in another file": {&mysqlDialect, [][]map[string]string{{{"read_only": "1", "max_connections": "151"}}, nil, nil,
			{{"Source_Host": "db-0", "Replica_IO_Running": "No", "Replica_SQL_Running": "Yes", "Seconds_Behind_Source": "NULL",
				"Source_Log_File": "binlog.000003", "Relay_Source_Log_File": "binlog.000002", "Read_Source_Log_Pos": "10", "Exec_Source_Log_Pos": "500"}}},
			func(s dbSample) error {
				if s.role != RoleReplica || s.streaming == nil || *s.streaming || s.lagSeconds != nil || s.lagBytes != nil || s.binlogSize != nil {
					return fmt.Errorf("role %s streaming %v lag %v s %v bytes binlogs %v, want replica not streaming, lag and binlogs unknown",
						s.role, deref(s.streaming), s.lagSeconds, s.lagBytes, s.binlogSize)
				}
				return nil
			}},
		"primary": {&mariadbDialect, [][]map[string]string{{{"read_only": "0", "max_connections": "151"}}, sizes, status, nil, binlogs}, func(s dbSample) error {
			if s.role != RolePrimary || s.streaming != nil || s.lagSeconds != nil || s.lagBytes != nil {
				return fmt.Errorf("role %s, streaming %v, lag %v/%v: want a primary without replica series", s.role, s.streaming, s.lagSeconds, s.lagBytes)
			}
			return nil
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if err := tc.want(tc.d.metricsSample(tc.sets)); err != nil {
				t.Error(err)
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestDatabaseMetricsDocumented: every series the collector may emit has its row in
// docs/database-metrics.md.
func TestDatabaseMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "database-metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, name := range MetricNames() {
		n++
		if !strings.Contains(string(doc), "| `"+name+"` |") {
			t.Errorf("docs/database-metrics.md has no row for %s", name)
		}
	}
	if n < 15 {
		t.Errorf("the collector describes %d series, fewer than it emits", n)
	}
}
