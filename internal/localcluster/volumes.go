package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// VolumeProvisioner is the provisioner of the local cluster's default StorageClass: the
// cluster's own stand-in for a storage driver (volumeProvisioner), never meant for
// production manifests.
const VolumeProvisioner = "localcluster.mooring.dev/host-path"

const (
	// provisionedBy is the annotation the PV controller reads to leave a volume's
	// deletion to its (external) provisioner.
	provisionedBy = "pv.kubernetes.io/provisioned-by"
	// volumeDirMode is the mode a volume's directory is created with: root's, and its
	// group's. On the real node the kubelet hands a local volume to the pod's fsGroup
	// (group owner, setgid, group rw) before the pod starts, so a database running as
	// its image's user writes it; nobody else on the machine can.
	volumeDirMode = 0o770
	// volumeResync re-delivers every claim and volume, so a failed step is tried again.
	volumeResync = 30 * time.Second
)

// volumesDir is where a cluster keeps its volumes: in its state directory, so they live
// as long as the cluster's objects (etcd's data) and `mooring-dev clean` removes both.
func volumesDir(stateDir string) string { return filepath.Join(stateDir, "volumes") }

// volumeProvisioner provisions a directory of this machine for every claim of the
// default StorageClass and removes it when its volume is released, as a storage driver
// does. It replaces the controller-manager's dev-only hostPath provisioner, which puts
// directories in /tmp/hostpath_pv (outside the state directory), makes them root's
// (0750) and, with no kubelet support for hostPath ownership, left each database pod
// without write access.
//
// With real nodes the volumes belong to a node, as real local storage does: the class
// waits for the first consumer, the scheduler picks the pod's node and names it on the
// claim (selectedNode), and the volume is a local volume of that node (node affinity),
// which its kubelet gives to the pod's fsGroup. A pod of that claim can run on that node
// only: when the node is gone, the pod waits for it, and failover must use another
// replica's data. On simulated nodes only they are hostPath volumes nobody mounts.
type volumeProvisioner struct {
	cs    kubernetes.Interface
	root  string
	local bool // local volumes of the claim's selected node, or hostPath volumes
	out   io.Writer

	// mu makes claims and volumes take turns: a directory is made only with its PV,
	// and removed only once the PV is released, never while the other runs.
	mu       sync.Mutex
	classes  cache.Indexer
	stop     context.CancelFunc
	stopOnce sync.Once
}

// selectedNode is the annotation the scheduler puts on a claim of a WaitForFirstConsumer
// class: the node of the claim's first pod, where its volume must be.
const selectedNode = "volume.kubernetes.io/selected-node"

// startVolumes starts the provisioner; local says the cluster has real nodes (see
// volumeProvisioner); shutdown ends it.
func startVolumes(cs kubernetes.Interface, stateDir string, local bool, out io.Writer) (*volumeProvisioner, error) {
	v := &volumeProvisioner{cs: cs, root: volumesDir(stateDir), local: local, out: out}
	if err := os.MkdirAll(v.root, 0o755); err != nil {
		return nil, fmt.Errorf("volumes: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.stop = cancel
	factory := informers.NewSharedInformerFactory(cs, volumeResync)
	classes := factory.Storage().V1().StorageClasses().Informer()
	v.classes = classes.GetIndexer()
	claims := factory.Core().V1().PersistentVolumeClaims().Informer()
	volumes := factory.Core().V1().PersistentVolumes().Informer()
	_, _ = claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.claim(ctx, obj) },
		UpdateFunc: func(_, obj any) { v.claim(ctx, obj) },
	})
	_, _ = volumes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.volume(ctx, obj) },
		UpdateFunc: func(_, obj any) { v.volume(ctx, obj) },
		DeleteFunc: func(obj any) { v.deleted(obj) },
	})
	factory.Start(ctx.Done())
	return v, nil
}

func (v *volumeProvisioner) shutdown() {
	if v != nil {
		v.stopOnce.Do(v.stop)
	}
}

// claim provisions a volume for an unbound claim of one of this provisioner's classes.
func (v *volumeProvisioner) claim(ctx context.Context, obj any) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil || pvc.Spec.StorageClassName == nil {
		return
	}
	class := v.class(*pvc.Spec.StorageClassName)
	if class == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	// The informer may lag: provision only for a claim that exists and is unbound now.
	live, err := v.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
	if err != nil || live.UID != pvc.UID || live.Spec.VolumeName != "" || live.DeletionTimestamp != nil {
		return
	}
	// A claim of a WaitForFirstConsumer class is provisioned once the scheduler has
	// picked its first pod's node; its update with the node comes here again.
	if mode := class.VolumeBindingMode; mode != nil && *mode == storagev1.VolumeBindingWaitForFirstConsumer &&
		live.Annotations[selectedNode] == "" {
		return
	}
	if err := v.provision(ctx, live, class); err != nil {
		fmt.Fprintf(v.out, "localcluster: volume for claim %s/%s: %v (retried in %s)\n", pvc.Namespace, pvc.Name, err, volumeResync)
	}
}

func (v *volumeProvisioner) class(name string) *storagev1.StorageClass {
	obj, ok, err := v.classes.GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	class, _ := obj.(*storagev1.StorageClass)
	if class == nil || class.Provisioner != VolumeProvisioner {
		return nil
	}
	return class
}

// provision creates the PV, bound to the claim in advance (the PV controller completes
// the binding), then its directory. A PV that exists already has its directory.
func (v *volumeProvisioner) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	if mode := pvc.Spec.VolumeMode; mode != nil && *mode != corev1.PersistentVolumeFilesystem {
		return fmt.Errorf("volume mode %s is not supported here, only %s", *mode, corev1.PersistentVolumeFilesystem)
	}
	pv := v.volumeFor(pvc, class)
	if _, err := v.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("create PV %s: %w", pv.Name, err)
	}
	dir := filepath.Join(v.root, pv.Name)
	// Mkdir and Chmod: the process's umask must not narrow the group's access.
	if err := os.Mkdir(dir, volumeDirMode); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, volumeDirMode); err != nil {
		return err
	}
	return nil
}

// volumeFor is the PV of a claim: named as provisioners name theirs, of the requested
// size and access modes, with the class's reclaim policy.
func (v *volumeProvisioner) volumeFor(pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) *corev1.PersistentVolume {
	name := "pvc-" + string(pvc.UID)
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	fs := corev1.PersistentVolumeFilesystem
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{provisionedBy: VolumeProvisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			VolumeMode:                    &fs,
			MountOptions:                  class.MountOptions,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
		},
	}
	dir := filepath.Join(v.root, name)
	node := pvc.Annotations[selectedNode]
	if !v.local || node == "" {
		pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)}
		return pv
	}
	pv.Spec.Local = &corev1.LocalVolumeSource{Path: dir}
	pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
		}}}},
	}}
	return pv
}

// volume deletes a released volume of this provisioner whose policy is Delete: its
// directory first, then the PV. Nothing here creates a directory, so the PV's later
// updates (the PV controller's, the protection finalizer's removal) cannot bring one
// back.
func (v *volumeProvisioner) volume(ctx context.Context, obj any) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok || !v.deletable(pv) {
		return
	}
	if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.removeDir(pv); err != nil {
		fmt.Fprintf(v.out, "localcluster: delete volume %s: %v (retried in %s)\n", pv.Name, err, volumeResync)
		return
	}
	if pv.DeletionTimestamp != nil {
		return
	}
	err := v.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		fmt.Fprintf(v.out, "localcluster: delete PV %s: %v (retried in %s)\n", pv.Name, err, volumeResync)
	}
}

// deleted removes the directory of a PV deleted by hand (kubectl delete pv) when its
// policy said Delete.
func (v *volumeProvisioner) deleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok || !v.deletable(pv) {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.removeDir(pv); err != nil {
		fmt.Fprintf(v.out, "localcluster: delete volume %s: %v\n", pv.Name, err)
	}
}

func (v *volumeProvisioner) deletable(pv *corev1.PersistentVolume) bool {
	return pv.Annotations[provisionedBy] == VolumeProvisioner &&
		pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete
}

// removeDir removes a volume's directory, which must be one of this cluster's.
func (v *volumeProvisioner) removeDir(pv *corev1.PersistentVolume) error {
	dir := VolumeDir(pv)
	if dir == "" || filepath.Dir(dir) != v.root {
		return fmt.Errorf("its path %q is not in %s", dir, v.root)
	}
	return os.RemoveAll(dir)
}

// VolumeDir is the directory of this machine that holds a local cluster's volume (a
// local or hostPath PV), or "" for any other kind of volume.
func VolumeDir(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	}
	return ""
}
