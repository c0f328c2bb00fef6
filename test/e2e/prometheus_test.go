package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/dashboards"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// Panels that list problems, empty on a healthy fleet, or that need leader election,
// which the suite's single operator runs without.
var emptyWhenHealthy = map[string]bool{"Not Ready": true, "Paused": true, "Leader": true, "Degraded": true, "Failing": true}

// TestDashboardQueriesReturnDataFromARealPrometheus runs Debian's Prometheus on
// 127.0.0.1, scraping the suite's operator every second, and asks it every query of the
// dashboards, the way Grafana would, over a fleet of one object of every kind and a
// Backup that succeeded once.
func TestDashboardQueriesReturnDataFromARealPrometheus(t *testing.T) {
	prom := startPrometheus(t, suite.Operator.MetricsAddr)
	ns := suite.Namespace(t, "monitoring")
	applySample(t, ns, "mooring_v1_app.yaml")
	applySample(t, ns, "mooring_v1_cacheinstance.yaml")
	applySample(t, ns, "mooring_v1beta1_databasecluster.yaml")
	applySample(t, ns, "mooring_v1_backup.yaml")
	suite.WaitField(t, rollout, ns, "app/hello", ".status.phase", "Running")
	suite.WaitField(t, rollout, ns, "backup/orders-nightly", ".status.phase", "Scheduled")
	suite.MustRun(t, "annotate", "-n", ns, "backup/orders-nightly", "mooring.dev/backup-now=monitoring")
	testutil.Eventually(t, rollout, "lastSuccessfulTime of Backup orders-nightly (kwok completes the Job)", func() error {
		got, err := suite.JSONPath(ns, "backup/orders-nightly", ".status.lastSuccessfulTime")
		if err == nil && got == "" {
			err = fmt.Errorf("not set yet")
		}
		return err
	})

	for _, file := range []string{"mooring-operator.json", "mooring-fleet.json", "mooring-databases-backups.json"} {
		for title, exprs := range dashboardQueries(t, file) {
			if emptyWhenHealthy[title] {
				continue
			}
			for _, expr := range exprs {
				q := strings.NewReplacer("$__rate_interval", "30s", `"$namespace"`, `".*"`).Replace(expr)
				testutil.Eventually(t, time.Minute, fmt.Sprintf("%s panel %q to return data for %s", file, title, q), func() error {
					n, err := prom.query(q)
					if err != nil {
						return err
					}
					if n == 0 {
						return fmt.Errorf("no series")
					}
					return nil
				})
			}
		}
	}
}

type prometheus struct{ addr string }

// startPrometheus runs /usr/bin/prometheus with one job scraping target, named as the
// ServiceMonitor's job is, and stops it when the test ends.
func startPrometheus(t *testing.T, target string) prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not found: install Debian's prometheus package (.ci/run does)")
	}
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
- job_name: mooring-metrics-service
  static_configs: [{targets: [%q]}]
`, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(suite.StateDir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
	})
	p := prometheus{addr: addr}
	testutil.Eventually(t, time.Minute, "Prometheus to scrape the operator (up == 1)", func() error {
		n, err := p.query(`up{job="mooring-metrics-service"} == 1`)
		if err == nil && n == 0 {
			err = fmt.Errorf("target not up yet")
		}
		return err
	})
	return p
}

// queryClient bounds one query, which runs inside a poll: a Prometheus that stops
// answering must fail the poll with its message, not hang the test.
var queryClient = &http.Client{Timeout: 10 * time.Second}

// query runs an instant query and returns how many series it returned.
func (p prometheus) query(q string) (int, error) {
	resp, err := queryClient.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("decode answer: %w", err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query failed: %s", r.Error)
	}
	return len(r.Data.Result), nil
}

// dashboardQueries returns the queries of every panel of a dashboard in config/grafana.
func dashboardQueries(t *testing.T, file string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(suite.Root, "config", "grafana", file))
	if err != nil {
		t.Fatal(err)
	}
	queries, err := dashboards.PanelQueries(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return queries
}
