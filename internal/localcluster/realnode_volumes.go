package localcluster

import (
	"context"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// hostPathVolumeDir is where the controller-manager's dev-only hostPath provisioner
// makes each volume's directory.
const hostPathVolumeDir = "/tmp/hostpath_pv/"

// openHostPathVolumes makes every volume the hostPath provisioner creates writable by
// any user, for as long as the real node runs. The provisioner makes the directories
// root's (0750), and the kubelet does not give hostPath volumes to a pod's fsGroup as it
// does real volumes: a database pod running as its image's user (999) could not write
// its data. It is the local stand-in for a storage driver, and never for production.
func (n *realNode) openHostPathVolumes(cs kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	n.stopVolumes = cancel
	factory := informers.NewSharedInformerFactory(cs, 0)
	open := func(obj any) {
		pv, ok := obj.(*corev1.PersistentVolume)
		if !ok || pv.Spec.HostPath == nil || !strings.HasPrefix(pv.Spec.HostPath.Path, hostPathVolumeDir) {
			return
		}
		// MkdirAll too: the directory is the provisioner's, but an event may come first.
		if os.MkdirAll(pv.Spec.HostPath.Path, 0o777) == nil {
			_ = os.Chmod(pv.Spec.HostPath.Path, 0o777)
		}
	}
	_, _ = factory.Core().V1().PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    open,
		UpdateFunc: func(_, obj any) { open(obj) },
	})
	factory.Start(ctx.Done())
}
