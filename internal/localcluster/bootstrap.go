package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// StorageClassName is the default StorageClass of a local cluster. Its provisioner is
// the controller-manager's dev-only hostPath provisioner, which makes directories under
// /tmp/hostpath_pv on this machine; it is never meant for production manifests.
const StorageClassName = "standard"

// ensureStorageClass creates the default StorageClass so PVCs without a class bind.
// Immediate binding matters: with WaitForFirstConsumer the volume would wait for a
// kubelet that does not exist.
func ensureStorageClass(ctx context.Context, cs kubernetes.Interface) error {
	immediate := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       "kubernetes.io/host-path",
		VolumeBindingMode: &immediate,
	}
	_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
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
