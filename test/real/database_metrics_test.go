package real

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/instance"
	"github.com/mooringhq/mooring/internal/testutil"
)

// metricsClient bounds one scrape, which runs inside a poll.
var metricsClient = &http.Client{Timeout: 10 * time.Second}

// scrapeDatabasePod reads the instance manager's /metrics at the pod's IP on the status
// port, as the PodMonitor's Prometheus does, and returns each sample line's series and
// value.
func scrapeDatabasePod(ctx context.Context, ns, pod string) (map[string]float64, error) {
	p, err := suite.cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	url := "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(instance.StatusPort)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if line == "" || strings.HasPrefix(line, "#") || i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// checkDatabaseMetrics: every pod of a replicating cluster serves /metrics on the status
// port without a token: up, its role, and on a replica the replication lag in seconds and
// bytes and streaming; on a PostgreSQL primary, each replica's slot.
func checkDatabaseMetrics(t *testing.T, e dbEngine, db *v1beta1.DatabaseCluster) {
	t.Helper()
	for i := range int(db.Spec.ReplicaCount) {
		pod := fmt.Sprintf("%s-%d", db.Name, i)
		role := instance.RoleReplica
		want := []string{`mooring_db_replication_lag_seconds`, `mooring_db_replication_lag_bytes`}
		if pod == database.PrimaryPodName(db) {
			role, want = instance.RolePrimary, nil
			for r := 1; r < int(db.Spec.ReplicaCount); r++ {
				if e.engine == v1beta1.PostgreSQL {
					want = append(want, fmt.Sprintf(`mooring_db_replication_slot_retained_bytes{slot="%s_%d"}`, strings.ReplaceAll(db.Name, "-", "_"), r))
				}
			}
		}
		testutil.Eventually(t, time.Minute, pod+"'s /metrics with its role "+role, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			s, err := scrapeDatabasePod(ctx, db.Namespace, pod)
			if err != nil {
				return err
			}
			if up := s[`mooring_db_up{engine="`+string(e.engine)+`"}`]; up != 1 {
				return fmt.Errorf("mooring_db_up %v, want 1 (%d series)", up, len(s))
			}
			if got := s[`mooring_db_role{role="`+role+`"}`]; got != 1 {
				return fmt.Errorf("mooring_db_role{role=%q} %v, want 1", role, got)
			}
			for _, k := range want {
				if _, ok := s[k]; !ok {
					return fmt.Errorf("no %s", k)
				}
			}
			if role == instance.RoleReplica && s[`mooring_db_replication_streaming`] != 1 {
				return fmt.Errorf("mooring_db_replication_streaming %v, want 1", s[`mooring_db_replication_streaming`])
			}
			if _, ok := s[`mooring_db_replication_lag_seconds`]; role == instance.RolePrimary && ok {
				return fmt.Errorf("the primary reports a replication lag of its own")
			}
			return nil
		})
	}
}
