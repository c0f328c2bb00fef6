package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// StorageClassName is the default StorageClass of a local cluster. Its provisioner is
// the cluster's own (VolumeProvisioner, volumes.go), which makes directories in the state
// directory; it is never meant for production manifests.
const StorageClassName = "standard"

// ensureStorageClass creates the default StorageClass so PVCs without a class bind.
// With real nodes (local) it waits for the first consumer: a volume belongs to the node
// its first pod is scheduled on (volumes.go). Without them binding is immediate, and the
// simulated nodes' volumes belong to no node. A class kept from a state directory of an
// earlier version (the controller-manager's hostPath provisioner) or of the other mode
// is replaced: a class's provisioner and binding mode cannot be changed in place, and
// claims refer to it by name only.
func ensureStorageClass(ctx context.Context, cs kubernetes.Interface, local bool) error {
	binding := storagev1.VolumeBindingImmediate
	if local {
		binding = storagev1.VolumeBindingWaitForFirstConsumer
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       VolumeProvisioner,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &binding,
	}
	old, err := cs.StorageV1().StorageClasses().Get(ctx, StorageClassName, metav1.GetOptions{})
	switch {
	case err == nil && old.Provisioner == VolumeProvisioner && ptr.Deref(old.VolumeBindingMode, "") == binding:
		return nil
	case err == nil:
		if err := cs.StorageV1().StorageClasses().Delete(ctx, StorageClassName, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &old.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replace StorageClass %s of provisioner %s, binding %s: %w", StorageClassName, old.Provisioner,
				ptr.Deref(old.VolumeBindingMode, ""), err)
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get StorageClass %s: %w", StorageClassName, err)
	}
	_, err = cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create StorageClass %s: %w", StorageClassName, err)
	}
	return nil
}

// defaultServiceAccount holds once the service-account controller has created
// default/default: the ServiceAccount admission plugin rejects pods until then.
func defaultServiceAccount(cs kubernetes.Interface) check {
	return func(ctx context.Context) (bool, string) {
		_, err := cs.CoreV1().ServiceAccounts(corev1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	}
}

// alignKubernetesEndpoints points the `kubernetes` Service's Endpoints and EndpointSlice
// at the API server's port of this run. Every start picks a free port, but the API
// server reconciles its endpoints' ports only when it creates them: over kept state they
// still named the last run's port, and every pod that talks to the API server through
// the Service (10.96.0.1:443, as in-cluster clients do) was refused after a restart.
// Nothing is written when the ports are right. The API server writes both objects too
// (its endpoint reconciler, right after it starts), so a conflict is read again.
func alignKubernetesEndpoints(ctx context.Context, cs kubernetes.Interface, port int32) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error { return alignEndpointsOnce(ctx, cs, port) })
}

func alignEndpointsOnce(ctx context.Context, cs kubernetes.Interface, port int32) error {
	ep, err := cs.CoreV1().Endpoints(corev1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // the API server creates it, with its port
	}
	if err != nil {
		return fmt.Errorf("get Endpoints kubernetes: %w", err)
	}
	changed := false
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if p := &ep.Subsets[i].Ports[j]; p.Name == "https" && p.Port != port {
				p.Port, changed = port, true
			}
		}
	}
	if changed {
		if _, err := cs.CoreV1().Endpoints(corev1.NamespaceDefault).Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
			return err // wrapped by nobody: RetryOnConflict must see a conflict as it is
		}
	}
	slice, err := cs.DiscoveryV1().EndpointSlices(corev1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get EndpointSlice kubernetes: %w", err)
	}
	changed = false
	for i := range slice.Ports {
		if p := &slice.Ports[i]; p.Name != nil && *p.Name == "https" && (p.Port == nil || *p.Port != port) {
			p.Port, changed = &port, true
		}
	}
	if changed {
		if _, err := cs.DiscoveryV1().EndpointSlices(corev1.NamespaceDefault).Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}
