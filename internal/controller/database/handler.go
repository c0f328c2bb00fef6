package database

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

// +kubebuilder:rbac:groups=mooring.dev,resources=databaseclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=databaseclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=databaseclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete

// SecretNameField indexes DatabaseClusters by spec.secretName, so a Secret that appears
// finds the clusters waiting for it without a list of every cluster.
const SecretNameField = "spec.secretName"

// Handler plugs the DatabaseCluster kind into the engine.
type Handler struct {
	// APIReader reads a Secret the user names in spec.secretName past the cache (which
	// keeps no Secret data) to check that it has the credential keys.
	APIReader client.Reader
	// KeyChecks saves reading that Secret again while it has not changed.
	KeyChecks *KeyChecks
	// Resizes saves sending a refused volume expansion again while nothing changed.
	Resizes *ResizeAttempts
	// Fingerprints saves reading the credentials and superuser Secrets again while they
	// have not changed.
	Fingerprints *Fingerprints
	// Instances asks the database pods' instance managers for their status; nil asks
	// nothing (status.instances then lists the pods alone).
	Instances *InstanceClient
	// CACerts saves reading the server certificate's Secret for the binding's ca.crt
	// again while it has not changed.
	CACerts *CACerts
}

// Owned lists the kinds of a cluster's children that the engine applies and prunes (the
// PodDisruptionBudget goes when the cluster drops to one instance). The credentials Secret
// is not among them: it is created once and never pruned.
var Owned = []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}, &policyv1.PodDisruptionBudget{}, &networkingv1.NetworkPolicy{}}

// Cached lists further kinds Mooring reads from the cache by its labels: the data PVCs.
var Cached = []client.Object{&corev1.PersistentVolumeClaim{}}

// NewObject returns an empty DatabaseCluster.
func (Handler) NewObject() *v1beta1.DatabaseCluster { return &v1beta1.DatabaseCluster{} }

// Validate has nothing left to check: CEL and the webhooks reject invalid specs.
func (Handler) Validate(*v1beta1.DatabaseCluster) error { return nil }

// Sync makes sure the credentials exist, grows volumes when asked, applies the children
// and derives status.
func (h Handler) Sync(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (ctrl.Result, error) {
	db := s.Object
	secretReady, certRecheck, err := h.ensureSecrets(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !secretReady {
		// Pods without their Secret would only crash-loop: create nothing yet, and keep
		// what exists (the Secret may come back), until the Secret watch brings us back.
		s.KeepChildren()
		// The pods that run keep running without the Secret: the counts (and the scale
		// subresource, which reads them) still come from the live StatefulSet, and only
		// SecretReady and Ready report the Secret.
		live, err := liveStatefulSet(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		deriveStatus(db, live, false)
		return ctrl.Result{}, nil
	}

	want := StorageSize(db)
	resize, err := h.growStorage(ctx, s, want)
	if err != nil {
		return ctrl.Result{}, err
	}
	if resize.recreating {
		s.KeepChildren()
		deriveStatus(db, nil, true)
		return ctrl.Result{}, nil
	}
	template := db
	if resize.refused {
		// The volumes could not grow: the StatefulSet keeps their size (its claim templates
		// cannot change) and everything else is applied as usual.
		template = db.DeepCopy()
		template.Spec.Storage.Size = &resize.have
	}
	sts, err := StatefulSet(template)
	if err != nil {
		return ctrl.Result{}, err
	}
	live, err := liveStatefulSet(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	legacy := live != nil && isBitnamiStatefulSet(live)
	if err := markInitialized(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	children, err := h.children(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if legacy {
		if err := s.Keep(live); err != nil {
			return ctrl.Result{}, err
		}
	} else {
		children = append(children, sts)
	}
	for _, child := range children {
		if err := s.Apply(ctx, child); err != nil {
			return ctrl.Result{}, err
		}
	}
	if legacy {
		keepLegacy(s, live)
		db.Status.Binding = bindingStatus(db)
		return ctrl.Result{}, h.syncCredentials(ctx, s, live)
	}
	// The condition exists only while there is something to do.
	apimeta.RemoveStatusCondition(&db.Status.Conditions, v1beta1.ConditionMigrationNeeded)
	res := ctrl.Result{RequeueAfter: certRecheck}
	if resize.refused {
		res.RequeueAfter = resizeRetryInterval // StorageResized=False/ResizeForbidden stays
	} else if err := storageStatus(ctx, s, want); err != nil {
		return ctrl.Result{}, err
	}
	deriveStatus(db, sts, true)
	db.Status.Binding = bindingStatus(db)
	if err := h.syncCredentials(ctx, s, sts); err != nil {
		return ctrl.Result{}, err
	}
	restored, err := h.syncRestore(ctx, s, sts.Status.ReadyReplicas > 0)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !restored {
		// Applications must not start on a database that is still being filled: the
		// cluster is not Running (bindings wait for it) until its dump is loaded.
		db.Status.Phase = v1beta1.DatabaseNotReady
		engine.SetCondition(db, mooringv1.ConditionReady, metav1.ConditionFalse, v1beta1.ReasonRestoring,
			"The cluster's data is not restored yet; the Restored condition says how far it is.")
	}
	again, err := h.observeInstances(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if again && (res.RequeueAfter == 0 || res.RequeueAfter > instancePollInterval) {
		res.RequeueAfter = instancePollInterval
	}
	return res, nil
}

// ensureSecrets makes sure of the cluster's Secrets in order (credentials, superuser,
// certificates), stopping at the first that must wait; it returns how soon the
// certificates must be looked at again.
func (h Handler) ensureSecrets(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (ready bool, certRecheck time.Duration, err error) {
	if ready, err = h.ensureSecret(ctx, s); err != nil || !ready {
		return ready, 0, err
	}
	if ready, err = h.ensureAdminSecret(ctx, s); err != nil || !ready {
		return ready, 0, err
	}
	return h.ensureTLS(ctx, s)
}

// children are the cluster's children other than its StatefulSet: Children's, the
// binding with the CA bound Apps verify the server with, and the NetworkPolicy that
// admits the cluster's clients.
func (h Handler) children(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) ([]client.Object, error) {
	db := s.Object
	children := Children(db)
	ca, err := h.bindingCA(ctx, s)
	if err != nil {
		return nil, err
	}
	withBindingTLS(db, children, ca)
	clients, err := clientsOf(ctx, s.Client, db)
	if err != nil {
		return nil, err
	}
	return append(children, NetworkPolicy(db, clients)), nil
}

// liveStatefulSet is the cluster's StatefulSet from the cache, nil when there is none
// or it is not the cluster's.
func liveStatefulSet(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (*appsv1.StatefulSet, error) {
	sts := &appsv1.StatefulSet{}
	err := s.Client.Get(ctx, client.ObjectKeyFromObject(s.Object), sts)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get StatefulSet %s: %w", s.Object.Name, err)
	case !metav1.IsControlledBy(sts, s.Object):
		return nil, nil
	}
	return sts, nil
}

// SetupWithManager registers the DatabaseCluster controller with its Secret index and
// watches: Secrets metadata-only, and the data PVCs by label.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1beta1.DatabaseCluster{}, SecretNameField, func(o client.Object) []string {
		return []string{o.(*v1beta1.DatabaseCluster).Spec.SecretName}
	}); err != nil {
		return err
	}
	c := mgr.GetClient()
	clustersUsingSecret := engine.EnqueueByIndex(c, func() client.ObjectList { return &v1beta1.DatabaseClusterList{} }, SecretNameField)
	clusterOfClaim := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		if l[mooringv1.ComponentLabel] != Component || l[mooringv1.InstanceLabel] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: l[mooringv1.InstanceLabel]}}}
	})
	clustersOfApp := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, b := range o.(*mooringv1.App).Spec.Bindings {
			if b.Ref.Kind == mooringv1.BindingKindDatabaseCluster {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: b.Ref.Name}})
			}
		}
		return out
	})
	clusterOfBackup := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: o.(*mooringv1.Backup).Spec.DatabaseRef.Name}}}
	})
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	// The superuser Secret is found by its name and labels, which name its cluster.
	clusterOfAdminSecret := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		name := l[mooringv1.InstanceLabel]
		if l[mooringv1.ComponentLabel] != Component || name == "" || o.GetName() != name+"-admin" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
	})
	h := Handler{APIReader: mgr.GetAPIReader(), KeyChecks: &KeyChecks{}, Resizes: &ResizeAttempts{}, Fingerprints: &Fingerprints{}, Instances: NewInstanceClient(), CACerts: &CACerts{}}
	return engine.SetupWithManager[*v1beta1.DatabaseCluster](mgr, h, engine.Options{
		Component: Component, Owns: Owned, MaxConcurrentReconciles: concurrency,
		Watches: []engine.Watch{
			// The credentials and restore Jobs, by their owner (the final snapshot Job has
			// none: Finalize polls it).
			{Object: &batchv1.Job{}},
			{Object: &corev1.PersistentVolumeClaim{}, Handler: clusterOfClaim},
			// The NetworkPolicy admits the Apps bound to the cluster and its Backups' Jobs.
			{Object: &mooringv1.App{}, Handler: clustersOfApp},
			{Object: &mooringv1.Backup{}, Handler: clusterOfBackup},
		},
	}, func(b *builder.Builder) {
		b.Watches(secret, clustersUsingSecret, builder.OnlyMetadata).
			Watches(secret, clusterOfAdminSecret, builder.OnlyMetadata)
	})
}
