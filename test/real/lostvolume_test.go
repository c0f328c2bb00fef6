package real

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/instance"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// TestLostVolumesForReal: for each engine, a primary and a replica on the real node,
// with rows written. The instance manager, PID 1 of the database container, reaps the
// orphan a `kubectl exec` leaves behind, and its /status refuses a caller without the
// cluster's token. A replica whose volume and pod are deleted comes back as a copy of
// the primary with every row. A primary whose volume and pod are deleted does not
// initialise an empty database: it is never ready (no write can reach it), the cluster
// says why (InstancesHealthy False, PrimaryDataLost, and a Warning event), and the
// replica still has every row.
func TestLostVolumesForReal(t *testing.T) {
	t.Parallel()
	for _, e := range []dbEngine{pgEngine, mariaEngine} {
		t.Run(string(e.engine), func(t *testing.T) {
			t.Parallel()
			db := createDatabase(t, e, "lost-"+string(e.engine), 2)
			ns := db.Namespace
			waitReplicating(t, db, 6*time.Minute)
			primary, replica := db.Name+"-0", db.Name+"-1"
			e.mustSQL(t, ns, primary, "CREATE TABLE ledger (id int PRIMARY KEY, entry varchar(40)); INSERT INTO ledger VALUES (1, 'moored'), (2, 'cast off');")
			rowsOnReplicas(t, e, ns, []string{replica}, "moored,cast off")
			testutil.Eventually(t, time.Minute, "status.initialized", func() error {
				live := &v1beta1.DatabaseCluster{}
				if err := suite.c.Get(context.Background(), client.ObjectKeyFromObject(db), live); err != nil {
					return err
				}
				if !live.Status.Initialized {
					return fmt.Errorf("status.initialized false")
				}
				return nil
			})

			orphanReaped(t, ns, replica)
			statusWantsToken(t, ns, db.Name, replica)

			// The replica's volume goes: it is copied from the primary again.
			replicaClaim := loseVolume(t, ns, replica)
			testutil.Eventually(t, 5*time.Minute, replica+" ready on a new volume", func() error {
				return podReadyOnNewClaim(ns, replica, replicaClaim)
			})
			rowsOnReplicas(t, e, ns, []string{replica}, "moored,cast off")
			if log := mustKubectl(t, "-n", ns, "logs", replica, "-c", "database"); !strings.Contains(log, "copying the primary") {
				t.Errorf("%s's manager does not say it copied the primary onto its empty volume:\n%s", replica, log)
			}
			waitReplicating(t, db, 3*time.Minute)
			e.mustSQL(t, ns, primary, "INSERT INTO ledger VALUES (3, 'after the copy');")
			rowsOnReplicas(t, e, ns, []string{replica}, "moored,cast off,after the copy")

			// The primary's volume goes: it waits, never ready, and says why.
			primaryClaim := loseVolume(t, ns, primary)
			var everReady bool
			testutil.Eventually(t, 5*time.Minute, "InstancesHealthy False with PrimaryDataLost", func() error {
				if p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), primary, metav1.GetOptions{}); err == nil &&
					p.DeletionTimestamp == nil && podIsReady(p) {
					everReady = true
				}
				if err := podOnNewClaim(ns, primary, primaryClaim); err != nil {
					return err
				}
				live := &v1beta1.DatabaseCluster{}
				if err := suite.c.Get(context.Background(), client.ObjectKeyFromObject(db), live); err != nil {
					return err
				}
				c := apimeta.FindStatusCondition(live.Status.Conditions, v1beta1.ConditionInstancesHealthy)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != instance.FaultPrimaryDataLost {
					return fmt.Errorf("InstancesHealthy %+v; pods:\n%s", c, podSummary(ns))
				}
				return nil
			})
			if everReady {
				t.Fatalf("%s was ready on its empty volume", primary)
			}
			warned := false
			events, err := suite.cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range events.Items {
				if ev.Type == corev1.EventTypeWarning && ev.Reason == instance.FaultPrimaryDataLost && ev.InvolvedObject.Name == db.Name {
					warned = true
				}
			}
			if !warned {
				t.Errorf("no Warning event %s on the DatabaseCluster", instance.FaultPrimaryDataLost)
			}
			// Still not ready over two more of the manager's fault retries (10 s each):
			// it keeps waiting, so no client ever reaches an empty database through it.
			for deadline := time.Now().Add(25 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
				p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), primary, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if podIsReady(p) {
					t.Fatalf("%s became ready on its empty volume", primary)
				}
			}
			rowsOnReplicas(t, e, ns, []string{replica}, "moored,cast off,after the copy")
			if log := mustKubectl(t, "-n", ns, "logs", primary, "-c", "database"); strings.Contains(log, "initialising the data directory") {
				t.Errorf("%s initialised a data directory on its empty volume:\n%s", primary, log)
			}
		})
	}
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// loseVolume deletes pod's data claim and the pod, as a node's lost disk does, and
// returns the old claim's UID. The StatefulSet controller makes both again.
func loseVolume(t *testing.T, ns, pod string) types.UID {
	t.Helper()
	ctx := context.Background()
	claim := database.DataVolume + "-" + pod
	pvc, err := suite.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := suite.cs.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted claim %s (uid %s) and pod %s", claim, pvc.UID, pod)
	return pvc.UID
}

// podOnNewClaim is nil once pod runs on a claim other than old. A pod the StatefulSet
// made again while the old claim was still being deleted waits for that claim forever
// (the controller makes a claim only with a pod): it is deleted again, as a user would.
func podOnNewClaim(ns, pod string, old types.UID) error {
	ctx := context.Background()
	p, err := suite.cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pvc, err := suite.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, database.DataVolume+"-"+pod, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || (err == nil && pvc.UID == old):
		if p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil && time.Since(p.CreationTimestamp.Time) > 10*time.Second {
			_ = suite.cs.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{})
		}
		if err != nil {
			return fmt.Errorf("pod %s waits for a new claim: %w", pod, err)
		}
		return fmt.Errorf("pod %s waits for its old claim %s to go", pod, old)
	case err != nil:
		return err
	}
	if p.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("pod %s %s on claim %s", pod, p.Status.Phase, pvc.UID)
	}
	return nil
}

func podReadyOnNewClaim(ns, pod string, old types.UID) error {
	if err := podOnNewClaim(ns, pod, old); err != nil {
		return err
	}
	p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !podIsReady(p) {
		return fmt.Errorf("pod %s running, not ready", pod)
	}
	return nil
}

// orphanReaped leaves a background process behind a `kubectl exec` shell and checks that
// the instance manager (PID 1), which adopts it, reaps it once it exits: no zombie stays
// among the manager's children.
func orphanReaped(t *testing.T, ns, pod string) {
	t.Helper()
	p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manager, err := localcluster.ContainerPID(context.Background(), suite.cs, ns, pod, p.Status.ContainerStatuses[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "-n", ns, "exec", pod, "-c", "database", "--", "sh", "-c", "sleep 4 >/dev/null 2>&1 </dev/null & exit 0")
	children := func() map[string]string { // host pid → state, of the manager's sleep children
		out := map[string]string{}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", manager))
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			for _, pid := range strings.Fields(string(b)) {
				stat, err := os.ReadFile("/proc/" + pid + "/stat")
				if err != nil {
					continue
				}
				s := string(stat)
				if i := strings.LastIndexByte(s, ')'); i > 0 && strings.Contains(s[:i], "(sleep") {
					out[pid] = strings.Fields(s[i+1:])[0]
				}
			}
		}
		return out
	}
	adopted := ""
	testutil.Eventually(t, 10*time.Second, "the exec'd shell's sleep adopted by the instance manager (pid "+strconv.Itoa(manager)+")", func() error {
		for pid := range children() {
			adopted = pid
			return nil
		}
		return fmt.Errorf("no sleep among its children")
	})
	testutil.Eventually(t, 20*time.Second, "orphan "+adopted+" reaped once it exits", func() error {
		if state, ok := children()[adopted]; ok {
			return fmt.Errorf("pid %s still a child of the manager, state %s", adopted, state)
		}
		return nil
	})
}

// statusWantsToken: a pod's /status answers 401 to a caller without the cluster's token
// and the status to one with it (the operator's, derived from <name>-admin).
func statusWantsToken(t *testing.T, ns, cluster, pod string) {
	t.Helper()
	ctx := context.Background()
	p, err := suite.cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := suite.cs.CoreV1().Secrets(ns).Get(ctx, v1beta1.AdminSecretName(cluster), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(instance.StatusPort)) + "/status"
	get := func(token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close() //nolint:errcheck // read only
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(""); code != http.StatusUnauthorized {
		t.Errorf("/status of %s without a token: %d %s, want 401", pod, code, body)
	}
	if code, body := get(instance.StatusToken("not the password")); code != http.StatusUnauthorized {
		t.Errorf("/status of %s with another token: %d %s, want 401", pod, code, body)
	}
	if code, body := get(instance.StatusToken(string(admin.Data[database.PasswordKey]))); code != http.StatusOK || !strings.Contains(body, `"observation"`) {
		t.Errorf("/status of %s with the cluster's token: %d %s, want 200 with the observation", pod, code, body)
	}
}
