package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// binDir is bin/k8s of the repository, relative to this package.
var binDir = filepath.Join("..", "..", "bin", "k8s")

// TestClusterRunsWorkloads starts a real local cluster and checks what the e2e suite
// relies on: Deployments roll out, Jobs complete, PVCs bind, the state survives a
// restart and Stop frees every port and leaves no process behind.
func TestClusterRunsWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: starts a whole local cluster (about a minute)")
	}
	if missing := MissingBinaries(binDir); len(missing) > 0 {
		t.Skipf("skipping: %s not in %s; build them with hack/tools/build.sh", strings.Join(missing, ", "), binDir)
	}
	state := t.TempDir()
	c := startCluster(t, state)
	cs := kubernetes.NewForConfigOrDie(c.Config)
	ctx := t.Context()
	ns := "default"

	// The kubeconfig on disk must work on its own, with the server verified by the CA.
	kc, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	if kc.Insecure || len(kc.CAData) == 0 {
		t.Fatalf("kubeconfig must verify the server with a CA; got insecure=%v, %d bytes of CA", kc.Insecure, len(kc.CAData))
	}
	if _, err := kubernetes.NewForConfigOrDie(kc).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("kubeconfig client: %v", err)
	}

	// The real node's DNS objects are made at every start; on kept state they exist.
	for i := range 2 {
		if err := ensureClusterDNS(ctx, cs); err != nil {
			t.Fatalf("cluster DNS objects, start %d over this state: %v", i+1, err)
		}
	}

	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	took := eventually(t, 2*time.Minute, "deployment web with 3 available replicas", func() (bool, string) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 3, fmt.Sprintf("replicas=%d updated=%d ready=%d available=%d",
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas)
	})
	t.Logf("deployment rolled out 3/3 in %s", took.Round(100*time.Millisecond))

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: ns},
		Spec:       batchv1.JobSpec{Template: podTemplate(nil)},
	}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create job: %v", err)
	}
	took = eventually(t, 2*time.Minute, "job once with condition Complete=True", func() (bool, string) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var conds []string
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return true, ""
			}
			conds = append(conds, string(cond.Type)+"="+string(cond.Status))
		}
		return false, fmt.Sprintf("active=%d succeeded=%d failed=%d conditions=%v",
			j.Status.Active, j.Status.Succeeded, j.Status.Failed, conds)
	})
	t.Logf("job completed in %s", took.Round(100*time.Millisecond))

	stsLabels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: stsLabels},
			Template: podTemplate(stsLabels),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					},
				},
			}},
		},
	}
	sts.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create statefulset: %v", err)
	}
	var pvName string
	took = eventually(t, 2*time.Minute, "PVC data-db-0 Bound (default StorageClass, the cluster's provisioner)", func() (bool, string) {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pvName = pvc.Spec.VolumeName
		return pvc.Status.Phase == corev1.ClaimBound, fmt.Sprintf("phase=%s class=%v volume=%q",
			pvc.Status.Phase, ptr.Deref(pvc.Spec.StorageClassName, "<none>"), pvc.Spec.VolumeName)
	})
	t.Logf("PVC bound to %s in %s", pvName, took.Round(100*time.Millisecond))
	volumeDir := checkVolumeDir(t, cs, pvName, state)
	took = eventually(t, 2*time.Minute, "statefulset db with 1 ready replica", func() (bool, string) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.ReadyReplicas == 1, fmt.Sprintf("replicas=%d ready=%d", s.Status.Replicas, s.Status.ReadyReplicas)
	})
	t.Logf("statefulset ready in %s", took.Round(100*time.Millisecond))

	// kwok must keep renewing the node leases, or the node lifecycle controller turns
	// every node and pod NotReady after its grace period (about a minute in).
	renewed := map[string]time.Time{}
	took = eventually(t, time.Minute, "every node lease renewed again by kwok", func() (bool, string) {
		leases, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		n := 0
		for _, l := range leases.Items {
			if l.Spec.RenewTime == nil {
				continue
			}
			first, ok := renewed[l.Name]
			if !ok {
				renewed[l.Name] = l.Spec.RenewTime.Time
			} else if l.Spec.RenewTime.After(first) {
				n++
			}
			seen = append(seen, l.Name+"@"+l.Spec.RenewTime.Format(time.RFC3339))
		}
		return n == 3, fmt.Sprintf("%d of 3 renewed; leases %v", n, seen)
	})
	t.Logf("node leases renewed within %s", took.Round(100*time.Millisecond))

	// Restart on the same state: the certificates and etcd data are reused, so the
	// Deployment is still there and the new kubeconfig (new port) reaches it.
	stopAndCheck(t, c)
	c = startCluster(t, state)
	cs = kubernetes.NewForConfigOrDie(c.Config)
	took = eventually(t, 2*time.Minute, "deployment web still 3 available after restart", func() (bool, string) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 3, fmt.Sprintf("available=%d", d.Status.AvailableReplicas)
	})
	t.Logf("deployment available after restart within %s", took.Round(100*time.Millisecond))
	// New pods must run at once after a restart too: the 20s bound is far above the
	// usual second and below the 40s a kwok waiting for its old node leases would take.
	scale, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get scale: %v", err)
	}
	scale.Spec.Replicas = 4
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scale deployment: %v", err)
	}
	took = eventually(t, 20*time.Second, "deployment web scaled to 4 available after restart", func() (bool, string) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 4, fmt.Sprintf("replicas=%d available=%d", d.Status.Replicas, d.Status.AvailableReplicas)
	})
	t.Logf("scaled to 4 after restart in %s", took.Round(100*time.Millisecond))

	// The volume's directory is kept with the rest of the state; released, it goes.
	if _, err := os.Stat(volumeDir); err != nil {
		t.Fatalf("volume directory after the restart: %v", err)
	}
	if err := cs.AppsV1().StatefulSets(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete statefulset: %v", err)
	}
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data-db-0", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pvc: %v", err)
	}
	took = eventually(t, 2*time.Minute, "PV "+pvName+" deleted after its PVC", func() (bool, string) {
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase=%s", pv.Status.Phase)
	})
	t.Logf("PV deleted within %s", took.Round(100*time.Millisecond))
	if _, err := os.Stat(volumeDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("volume directory %s after its PV was deleted: %v, want it gone", volumeDir, err)
	}
	stopAndCheck(t, c)
}

// checkVolumeDir checks that the PV's directory is in the cluster's state directory,
// exists, and is open to its owner and group only; it returns the directory.
func checkVolumeDir(t *testing.T, cs kubernetes.Interface, pvName, state string) string {
	t.Helper()
	pv, err := cs.CoreV1().PersistentVolumes().Get(t.Context(), pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := VolumeDir(pv)
	if want := filepath.Join(state, "volumes", pvName); dir != want {
		t.Fatalf("PV %s has directory %q, want %q (in the state directory)", pvName, dir, want)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("volume directory: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != volumeDirMode {
		t.Fatalf("volume directory %s has mode %#o, want %#o", dir, perm, volumeDirMode)
	}
	return dir
}

// startCluster starts a cluster on state and registers its Stop as cleanup.
func startCluster(t *testing.T, state string) *Cluster {
	t.Helper()
	t0 := time.Now()
	c, err := Start(t.Context(), Options{BinDir: binDir, StateDir: state, Out: testWriter{t}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	t.Logf("cluster started in %s", time.Since(t0).Round(100*time.Millisecond))
	return c
}

// stopAndCheck stops c and asserts that no component process is left and every port
// it listened on can be bound again.
func stopAndCheck(t *testing.T, c *Cluster) {
	t.Helper()
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for _, u := range c.units {
		p := u.current()
		if err := syscall.Kill(p.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists after Stop (kill -0: %v)", p.name, p.cmd.Process.Pid, err)
		}
	}
	l := c.layout
	for name, port := range map[string]int{
		"etcd client": l.etcdClient, "etcd peer": l.etcdPeer, "kube-apiserver": l.apiserver,
		"kube-controller-manager": l.controllerManager, "kube-scheduler": l.scheduler,
	} {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Errorf("%s port %d still in use after Stop: %v", name, port, err)
			continue
		}
		_ = ln.Close()
	}
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "main",
			Image: "registry.invalid/never-pulled:1", // kwok runs no container
		}}},
	}
}

// eventually polls check until it holds and returns how long that took, or fails the
// test with what was expected and what was last seen.
func eventually(t *testing.T, timeout time.Duration, want string, check func() (bool, string)) time.Duration {
	t.Helper()
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		ok, seen := check()
		if ok {
			return time.Since(t0)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waited %s for %s; last seen: %s", timeout, want, seen)
		case <-ticker.C:
		}
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestFreePortIsBindable checks FreePort returns a port that can be listened on.
func TestFreePortIsBindable(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("FreePort returned %d, which cannot be bound: %v", port, err)
	}
	_ = ln.Close()
}

// TestStartFailureNamesComponent checks a component that cannot start yields an error
// naming it and its log file, and that nothing is left running.
func TestStartFailureNamesComponent(t *testing.T) {
	bin := t.TempDir()
	for _, name := range requiredBinaries {
		script := "#!/bin/sh\necho \"" + name + ": pretending to fail\" >&2\nexit 3\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "kwok")
	for _, g := range kwokStageGlobs {
		f := filepath.Join(dir, strings.ReplaceAll(g, "*", "stage"))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("kind: Stage\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "kwok-module-dir"), []byte(dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	_, err := Start(t.Context(), Options{BinDir: bin, StateDir: state})
	if err == nil {
		t.Fatal("Start succeeded with an etcd that exits at once")
	}
	logPath := filepath.Join(state, "logs", "etcd.log")
	for _, want := range []string{"etcd exited", logPath, "pretending to fail"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
}
