package real

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// goneWithin bounds the time from a volume's release (its claim deleted) to its
// directory's removal: the provisioner acts on the release at once.
const goneWithin = 10 * time.Second

// stayGoneFor is how long the directories are watched after their PVs are removed: the
// re-creation seen before (issue 45) came with the PV's last updates, in the first second.
const stayGoneFor = 5 * time.Second

// TestDeletedDatabaseVolumesStayGone: a DatabaseCluster with deletionPolicy Delete on
// the real node has its volumes in the cluster's state directory, open to the
// database's group only (the pod's fsGroup, never 0777); deleted, its volume directories
// are gone within goneWithin of their release and stay gone after the PVs are removed.
func TestDeletedDatabaseVolumesStayGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "volumes-gone")
	mustKubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
	db := &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "short-lived", Namespace: ns},
		Spec: v1beta1.DatabaseClusterSpec{Engine: pgEngine.engine, Version: pgEngine.version, ReplicaCount: 1,
			DeletionPolicy: v1beta1.DeletionDelete},
	}
	if err := suite.c.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ns, db.Name, 5*time.Minute)

	claims, err := suite.cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) == 0 {
		t.Fatalf("the database's claims: %v, %d", err, len(claims.Items))
	}
	pod, err := suite.cs.CoreV1().Pods(ns).Get(ctx, db.Name+"-0", metav1.GetOptions{})
	if err != nil || pod.Spec.SecurityContext == nil || pod.Spec.SecurityContext.FSGroup == nil {
		t.Fatalf("the database pod's fsGroup: %v %+v", err, pod)
	}
	fsGroup := *pod.Spec.SecurityContext.FSGroup
	dirs := map[string]string{} // PV name -> directory
	volumesDir := suite.stateDir + "/cluster/volumes/"
	for _, pvc := range claims.Items {
		pv, err := suite.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("volume of %s: %v", pvc.Name, err)
		}
		// The volume belongs to the node its pod was scheduled on.
		if got := volumeNodes(pv); len(got) != 1 || got[0] != pod.Spec.NodeName {
			t.Fatalf("PV %s may be used on %v; want only %s, its pod's node", pv.Name, got, pod.Spec.NodeName)
		}
		dir := localcluster.VolumeDir(pv)
		if !strings.HasPrefix(dir, volumesDir) {
			t.Fatalf("PV %s has directory %q, want one in the cluster's state directory %s", pv.Name, dir, volumesDir)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		gid := fi.Sys().(*syscall.Stat_t).Gid
		if perm := fi.Mode().Perm(); perm&0o007 != 0 || perm&0o070 != 0o070 || int64(gid) != fsGroup {
			t.Fatalf("volume directory %s: mode %v group %d, want nothing for others, rwx for the group %d (the pod's fsGroup)",
				dir, fi.Mode(), gid, fsGroup)
		}
		dirs[pv.Name] = dir
	}
	t.Logf("volumes %v", dirs)

	t0 := time.Now()
	if err := suite.c.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Released: a PV that is no longer Bound (or already gone) has lost its claim.
	released := map[string]time.Time{}
	gone := map[string]time.Time{}
	testutil.Eventually(t, 3*time.Minute, "every volume released, its directory removed and its PV deleted", func() error {
		var waiting []string
		for name, dir := range dirs {
			pv, err := suite.cs.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
			pvGone := apierrors.IsNotFound(err)
			if err != nil && !pvGone {
				return err
			}
			phase := "deleted"
			if !pvGone {
				phase = string(pv.Status.Phase)
			}
			if _, ok := released[name]; !ok && (pvGone || pv.Status.Phase != corev1.VolumeBound) {
				released[name] = time.Now()
			}
			_, statErr := os.Stat(dir)
			dirGone := errors.Is(statErr, os.ErrNotExist)
			if _, ok := gone[name]; !ok && dirGone {
				gone[name] = time.Now()
			}
			if r, ok := released[name]; ok && !dirGone && time.Since(r) > goneWithin {
				t.Fatalf("directory %s still there %s after PV %s was released", dir, time.Since(r).Round(time.Millisecond), name)
			}
			if _, ok := gone[name]; ok && !dirGone {
				t.Fatalf("directory %s of PV %s came back after it was removed (%v)", dir, name, statErr)
			}
			if !pvGone || !dirGone {
				waiting = append(waiting, fmt.Sprintf("%s (phase %s, directory gone %v)", name, phase, dirGone))
			}
		}
		if len(waiting) > 0 {
			return fmt.Errorf("waiting for %s", strings.Join(waiting, ", "))
		}
		return nil
	})
	for name := range dirs {
		t.Logf("PV %s released %s after the delete, its directory gone %s after the release",
			name, released[name].Sub(t0).Round(time.Millisecond), gone[name].Sub(released[name]).Round(time.Millisecond))
	}
	// Stay gone: watched for stayGoneFor after the PVs' removal.
	deadline := time.Now().Add(stayGoneFor)
	for time.Now().Before(deadline) {
		for name, dir := range dirs {
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("directory %s of deleted PV %s is back (%v)", dir, name, err)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}
