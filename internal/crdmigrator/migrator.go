package crdmigrator

import (
	"context"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The CRDs Mooring migrates are named in these markers: the migrator may rewrite the status
// of no other CRD. (Reading CRDs is already granted for the certificate rotator.)
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=update;patch,resourceNames=databaseclusters.mooring.dev

// FieldOwner is the field manager of the migrator's empty apply requests; it owns no
// fields, so it never shows in managedFields.
const FieldOwner = "mooring-crdmigrator"

// pageSize bounds each list of stored objects.
const pageSize = 500

// scheme knows CRDs; the migrated objects are handled as metadata and unstructured.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// New returns a Migrator for the named CRDs that talks to the API server of cfg directly.
func New(cfg *rest.Config, crds ...string) (*Migrator, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("client for the CRD migrator: %w", err)
	}
	return &Migrator{Client: c, CRDs: crds}, nil
}

// Migrator migrates the stored objects of the named CRDs. It is a manager Runnable that
// runs once, on the leader only.
type Migrator struct {
	// Client must read from the API server, not a cache, and know CRDs: New makes one.
	Client client.Client
	// CRDs are the names of the CRDs to migrate, e.g. databaseclusters.mooring.dev.
	CRDs []string
	// Backoff paces retries while the API server or the conversion webhook is not ready
	// yet; the zero value means a sensible default.
	Backoff wait.Backoff
}

// NeedLeaderElection makes the migrator run on the elected leader only.
func (m *Migrator) NeedLeaderElection() bool { return true }

// Start migrates every CRD, retrying each until it succeeds or ctx ends. A failure is
// logged, not returned: the operator keeps working with a CRD left to migrate.
func (m *Migrator) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("crdmigrator")
	backoff := m.Backoff
	if backoff.Steps == 0 {
		backoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 10, Cap: time.Minute}
	}
	for _, name := range m.CRDs {
		var lastErr error
		err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			lastErr = m.Migrate(ctx, name)
			if lastErr != nil {
				log.Info("Storage version migration failed; retrying", "crd", name, "error", lastErr.Error())
			}
			return lastErr == nil, nil
		})
		if err != nil {
			log.Error(lastErr, "Gave up migrating stored objects", "crd", name)
		}
	}
	return nil
}

// Migrate rewrites every stored object of the CRD name in its storage version and then
// sets status.storedVersions to that version alone. It writes nothing when
// storedVersions already lists only the storage version.
func (m *Migrator) Migrate(ctx context.Context, name string) error {
	log := logf.FromContext(ctx).WithName("crdmigrator")
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := m.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return fmt.Errorf("get CRD %s: %w", name, err)
	}
	storage := storageVersion(crd)
	if storage == "" {
		return fmt.Errorf("CRD %s has no storage version", name)
	}
	if slices.Equal(crd.Status.StoredVersions, []string{storage}) {
		return nil
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: storage, Kind: crd.Spec.Names.Kind}
	n, err := m.rewriteAll(ctx, gvk)
	if err != nil {
		return fmt.Errorf("migrate %s to %s: %w", name, storage, err)
	}
	old := crd.Status.StoredVersions
	crd.Status.StoredVersions = []string{storage}
	// Update, not patch: the resourceVersion check fails if the CRD changed meanwhile
	// (perhaps a new storage version), and the retry starts over.
	if err := m.Client.Status().Update(ctx, crd); err != nil {
		return fmt.Errorf("trim storedVersions of CRD %s: %w", name, err)
	}
	log.Info("Migrated stored objects to the storage version", "crd", name, "storageVersion", storage,
		"objects", n, "previousStoredVersions", old)
	return nil
}

// rewriteAll sends every object of gvk an apply request that changes nothing: the API
// server decodes the object from whatever version it was stored in and writes it back
// encoded in the storage version.
func (m *Migrator) rewriteAll(ctx context.Context, gvk schema.GroupVersionKind) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	n := 0
	for {
		if err := m.Client.List(ctx, list, client.Limit(pageSize), client.Continue(list.Continue)); err != nil {
			return n, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			if err := m.rewrite(ctx, gvk, &list.Items[i]); err != nil {
				return n, err
			}
			n++
		}
		if list.Continue == "" {
			return n, nil
		}
	}
}

func (m *Migrator) rewrite(ctx context.Context, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(obj.Namespace)
	u.SetName(obj.Name)
	// uid and resourceVersion make it a precondition: the request fails rather than
	// recreate a deleted object, and a conflict means someone else has written the object,
	// which re-encoded it already.
	u.SetUID(obj.UID)
	u.SetResourceVersion(obj.ResourceVersion)
	err := m.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner))
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	default:
		return fmt.Errorf("rewrite %s %s/%s: %w", gvk.Kind, obj.Namespace, obj.Name, err)
	}
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}
