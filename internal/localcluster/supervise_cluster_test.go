package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestSupervisedCluster runs a local cluster (simulated nodes only) and a stand-in
// operator that needs the API server under one Supervisor, as mooring-dev does, and
// takes components away: killed ones come back and the cluster keeps serving; a
// paused kube-apiserver makes the operator exit, and it comes back once the server
// answers again; a restart on request leaves the other processes alone.
func TestSupervisedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: starts a whole local cluster (about a minute)")
	}
	if missing := MissingBinaries(binDir); len(missing) > 0 {
		t.Skipf("skipping: %s not in %s; build them with hack/tools/build.sh", strings.Join(missing, ", "), binDir)
	}
	ctx := t.Context()
	out := &syncBuffer{}
	sup := NewSupervisor(Backoff{Initial: 100 * time.Millisecond, Max: time.Second, ResetAfter: 10 * time.Second},
		teeWriter{out, testWriter{t}})
	c, err := Start(ctx, Options{BinDir: binDir, StateDir: t.TempDir(), Out: testWriter{t}, RealNode: RealNodeOff, Supervisor: sup})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	op, err := StartOperator(ctx, OperatorOptions{
		Binary: os.Args[0], Kubeconfig: c.KubeconfigPath, LogPath: filepath.Join(c.StateDir, "logs", "operator.log"),
		Env: []string{fakeOperatorEnv + "=lease"}, Supervisor: sup,
	})
	if err != nil {
		t.Fatalf("StartOperator: %v", err)
	}
	t.Cleanup(func() { _ = op.Stop() })
	cs := kubernetes.NewForConfigOrDie(c.Config)

	t.Run("killed operator, kwok and scheduler come back", func(t *testing.T) {
		before := pids(sup)
		opPid := op.Pid()
		sendSignal(t, opPid, syscall.SIGKILL)
		waitBack(t, op, opPid)
		for _, name := range []string{kwokController, scheduler} {
			sendSignal(t, before[name], syscall.SIGKILL)
			waitRestarted(t, sup, out, name, before[name])
		}
		// Scheduled by the new scheduler, run by the new kwok.
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "after-kills", Namespace: "default"}, Spec: podTemplate(nil).Spec}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
		eventually(t, time.Minute, "pod after-kills Running", func() (bool, string) {
			p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase=%s node=%q", p.Status.Phase, p.Spec.NodeName)
		})
		after := pids(sup)
		for _, name := range []string{etcd, kubeAPIServer, controllerManager} {
			if after[name] != before[name] {
				t.Errorf("%s pid changed from %d to %d; only the killed components should restart", name, before[name], after[name])
			}
		}
	})

	t.Run("restart on request leaves the others", func(t *testing.T) {
		before := pids(sup)
		if _, err := sup.Restart(ctx, controllerManager); err != nil {
			t.Fatalf("restart: %v", err)
		}
		after := pids(sup)
		for name, pid := range before {
			if changed := after[name] != pid; changed != (name == controllerManager) {
				t.Errorf("%s pid %d before the restart of %s, %d after", name, pid, controllerManager, after[name])
			}
		}
	})

	t.Run("paused kube-apiserver: the operator exits and comes back", func(t *testing.T) {
		before := pids(sup)
		restarts := statusOf(t, sup, OperatorComponent).Restarts
		sendSignal(t, before[kubeAPIServer], syscall.SIGSTOP)
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				sendSignal(t, before[kubeAPIServer], syscall.SIGCONT)
			}
		}
		t.Cleanup(resume)
		// The stand-in gives the server 2s; it exits, and exits again at every start
		// while the server stays paused.
		eventually(t, time.Minute, "the operator restarted at least twice while kube-apiserver is paused", func() (bool, string) {
			st := statusOf(t, sup, OperatorComponent)
			return st.Restarts >= restarts+2, fmt.Sprintf("%+v", st)
		})
		resume()
		waitBack(t, op, before[OperatorComponent])
		if st := statusOf(t, sup, kubeAPIServer); st.Pid != before[kubeAPIServer] || st.Restarts != 0 {
			t.Errorf("kube-apiserver %+v; want pid %d never restarted (it was paused, not dead)", st, before[kubeAPIServer])
		}
		if _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list nodes after the pause: %v", err)
		}
	})

	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, st := range sup.Status() {
		if st.State != "stopped" || alive(st.Pid) {
			t.Errorf("after Stop %s is %s, pid %d alive %v; want stopped", st.Name, st.State, st.Pid, alive(st.Pid))
		}
	}
}

// pids maps each supervised component to its current pid.
func pids(sup *Supervisor) map[string]int {
	m := map[string]int{}
	for _, st := range sup.Status() {
		m[st.Name] = st.Pid
	}
	return m
}

// waitRestarted waits until the supervisor reports name running as a pid other than
// pid and has said it is ready again.
func waitRestarted(t *testing.T, sup *Supervisor, out *syncBuffer, name string, pid int) {
	t.Helper()
	took := eventually(t, 2*time.Minute, name+" restarted and ready", func() (bool, string) {
		st := statusOf(t, sup, name)
		said := fmt.Sprintf("%s restarted (pid %d), ready", name, st.Pid)
		return st.Pid != pid && st.State == "running" && strings.Contains(out.String(), said), fmt.Sprintf("%+v", st)
	})
	t.Logf("%s back in %s", name, took.Round(100*time.Millisecond))
}

// teeWriter writes to both writers.
type teeWriter struct {
	a *syncBuffer
	b testWriter
}

func (w teeWriter) Write(p []byte) (int, error) {
	_, _ = w.a.Write(p)
	return w.b.Write(p)
}
