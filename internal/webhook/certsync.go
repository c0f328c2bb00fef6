package webhook

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
)

// certFiles are the keys of the certificate Secret the webhook server reads from its
// directory.
var certFiles = []string{"tls.crt", "tls.key", "ca.crt"}

// SyncSecretToDir does, for an operator running outside a cluster, what the kubelet does
// for a pod that mounts the certificate Secret: it watches that one Secret and writes its
// keys into dir whenever they change. The rotator waits for the files before it reports
// ready, and the webhook server reloads them on change.
func SyncSecretToDir(mgr ctrl.Manager, secret types.NamespacedName, dir string) error {
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create certificate directory: %w", err)
	}
	log := ctrl.Log.WithName("cert-sync")
	lw := toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "secrets", secret.Namespace,
		fields.OneTermEqualSelector("metadata.name", secret.Name))
	write := func(obj any) {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		if err := writeCertFiles(dir, s.Data); err != nil {
			log.Error(err, "Unable to write webhook certificates", "dir", dir)
		}
	}
	_, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.Secret{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    write,
			UpdateFunc: func(_, obj any) { write(obj) },
		},
	})
	return mgr.Add(runnableFunc(func(ctx context.Context) error {
		informer.RunWithContext(ctx)
		return nil
	}))
}

// writeCertFiles writes the certificate keys that changed, each atomically (a rename), so
// the webhook server never reads half a file.
func writeCertFiles(dir string, data map[string][]byte) error {
	for _, name := range certFiles {
		content, ok := data[name]
		if !ok || len(content) == 0 {
			continue
		}
		path := filepath.Join(dir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, content, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// runnableFunc runs a function with the manager, on every replica.
type runnableFunc func(context.Context) error

func (f runnableFunc) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection is false: every replica serves webhooks.
func (runnableFunc) NeedLeaderElection() bool { return false }
