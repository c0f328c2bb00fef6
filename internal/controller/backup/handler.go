package backup

import (
	"context"
	"fmt"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/dump"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/schedule"
)

// +kubebuilder:rbac:groups=mooring.dev,resources=backups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=backups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=backups/finalizers,verbs=update
// +kubebuilder:rbac:groups=mooring.dev,resources=databaseclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// DatabaseRefField indexes Backups by spec.databaseRef.name, so a DatabaseCluster that
// changes finds the Backups waiting for it without a list of every Backup.
const DatabaseRefField = "spec.databaseRef.name"

// Handler plugs the Backup kind into the engine.
type Handler struct {
	// APIReader reads past the cache, which holds only Mooring's labelled objects: to tell
	// a volume the cache has not seen yet from one somebody else made.
	APIReader client.Reader
	// Claims holds the metadata of every PersistentVolumeClaim once a Backup names one in
	// spec.storage.existingClaim (the claimsWatch on-demand watch fills it).
	Claims client.Reader
}

// Owned lists the kinds the engine applies and prunes for a Backup: the CronJob. Jobs are
// created once each and left to their own history rules; the volume is never pruned.
var Owned = []client.Object{&batchv1.CronJob{}}

// Cached lists further kinds Mooring reads from the cache by its labels: the dump Jobs
// (those of the CronJob carry the Backup's labels from the job template; final snapshot
// Jobs of DatabaseClusters are here too) and the volumes.
var Cached = []client.Object{&batchv1.Job{}, &corev1.PersistentVolumeClaim{}}

// NewObject returns an empty Backup.
func (Handler) NewObject() *mooringv1.Backup { return &mooringv1.Backup{} }

// Validate has nothing left to check: the schema and the webhook reject invalid specs.
func (Handler) Validate(*mooringv1.Backup) error { return nil }

// Sync waits for a Running database, then makes sure of the volume, the CronJob and the
// on-demand Job, and derives status from the Jobs.
func (h Handler) Sync(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) (ctrl.Result, error) {
	b := s.Object
	jobs, err := dumpJobs(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	o := observed{jobs: jobs, scheduleProblem: scheduleProblem(s)}
	db, err := runningDatabase(ctx, s, &o)
	if err != nil {
		return ctrl.Result{}, err
	}
	if db != nil {
		if err := h.checkExistingClaim(ctx, s, &o); err != nil {
			return ctrl.Result{}, err
		}
	}
	if o.waitReason != "" {
		// Nothing can be dumped yet. A CronJob that exists is kept as it is (its Jobs and
		// history go with it); the DatabaseCluster or claim watch brings the Backup back.
		s.KeepChildren()
		live := &batchv1.CronJob{}
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(b), live); err == nil {
			o.cronJob = live
			if err := suspendWhileGone(ctx, s, live, o.databaseGone); err != nil {
				return ctrl.Result{}, err
			}
		} else if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get CronJob %s: %w", b.Name, err)
		}
		derive(s, o)
		return ctrl.Result{}, nil
	}

	if err := h.ensureStorage(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	target := database.DumpTarget(db)
	cronJob := CronJob(b, target)
	if o.scheduleProblem != "" {
		// A schedule that runs every second would start a Job a second; one that never
		// runs, none. Suspended, the CronJob keeps its history; backup-now still works.
		cronJob.Spec.Suspend = ptr.To(true)
	}
	if err := s.Apply(ctx, cronJob); err != nil {
		return ctrl.Result{}, err
	}
	o.cronJob = cronJob
	var running string
	if o.jobs, running, err = backupNow(ctx, s, target, jobs); err != nil {
		return ctrl.Result{}, err
	}
	derive(s, o)
	backupNowWaiting(s, running)
	return ctrl.Result{}, nil
}

// scheduleProblem says why the Backup's schedule cannot run ("" when it can), with a
// Warning event when that is new: the webhook refuses such schedules, but a Backup
// admitted before it checked them keeps its schedule until edited.
func scheduleProblem(s *engine.Scope[*mooringv1.Backup]) string {
	b := s.Object
	err := schedule.Validate(b.Spec.Schedule)
	if err == nil {
		return ""
	}
	msg := fmt.Sprintf("spec.schedule %q %s; the CronJob is suspended until the schedule is changed (the %s annotation still takes a backup).",
		b.Spec.Schedule, err.Error(), mooringv1.BackupNowAnnotation)
	if !engine.HasCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonInvalidSchedule) {
		s.Event(corev1.EventTypeWarning, mooringv1.ReasonInvalidSchedule, "Reconcile", msg)
	}
	return msg
}

// suspendWhileGone suspends the CronJob of a Backup whose database no longer exists or is
// being deleted: every run would only fail (or race the final snapshot). The next apply,
// once the database runs again, sets suspend back from the spec. A database that is
// merely not ready keeps its schedule.
func suspendWhileGone(ctx context.Context, s *engine.Scope[*mooringv1.Backup], cj *batchv1.CronJob, gone bool) error {
	if !gone || ptr.Deref(cj.Spec.Suspend, false) {
		return nil
	}
	patch := client.MergeFrom(cj.DeepCopy())
	cj.Spec.Suspend = ptr.To(true)
	err := s.Patch(ctx, cj, patch, engine.Announce(corev1.EventTypeNormal, mooringv1.ReasonCronJobSuspended, "Suspend",
		fmt.Sprintf("Suspended CronJob %s: DatabaseCluster %s is gone or being deleted.", cj.Name, s.Object.Spec.DatabaseRef.Name)))
	if err != nil {
		return fmt.Errorf("suspend CronJob %s: %w", cj.Name, err)
	}
	return nil
}

// derive sets status and reports a backup that failed since the last reconcile with one
// Warning event: a failed Job is worth a notice, and a later resync must not repeat it.
func derive(s *engine.Scope[*mooringv1.Backup], o observed) {
	b := s.Object
	failedBefore := b.Status.LastFailedTime
	deriveStatus(b, o)
	if f := b.Status.LastFailedTime; f != nil && !f.Equal(failedBefore) {
		if c := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionLastBackupSucceeded); c != nil && c.Status == metav1.ConditionFalse {
			s.Event(corev1.EventTypeWarning, mooringv1.ReasonBackupFailed, "Backup", c.Message)
		}
	}
}

// runningDatabase returns the Backup's DatabaseCluster when it is Running; otherwise nil,
// with the reason in o, a Warning event when the reason is new, and no error.
func runningDatabase(ctx context.Context, s *engine.Scope[*mooringv1.Backup], o *observed) (*v1beta1.DatabaseCluster, error) {
	b := s.Object
	db := &v1beta1.DatabaseCluster{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.DatabaseRef.Name}, db)
	switch {
	case apierrors.IsNotFound(err):
		o.databaseGone = true
		o.waitReason = mooringv1.ReasonDatabaseNotFound
		o.waitMessage = fmt.Sprintf("DatabaseCluster %s does not exist in namespace %s; backups start once it is Running.",
			b.Spec.DatabaseRef.Name, b.Namespace)
	case err != nil:
		return nil, fmt.Errorf("get DatabaseCluster %s: %w", b.Spec.DatabaseRef.Name, err)
	case db.DeletionTimestamp != nil || db.Status.Phase != v1beta1.DatabaseRunning:
		phase := string(db.Status.Phase)
		if db.DeletionTimestamp != nil {
			o.databaseGone = true
			phase = string(v1beta1.DatabaseDeleting)
		}
		if phase == "" {
			phase = "not yet reconciled"
		}
		o.waitReason = mooringv1.ReasonDatabaseNotRunning
		o.waitMessage = fmt.Sprintf("DatabaseCluster %s is %s, not Running; backups start once it is Running.", db.Name, phase)
	default:
		return db, nil
	}
	// The reason, not the message, decides: a phase that moves from Pending to NotReady is
	// one wait, reported once.
	if !engine.HasCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, o.waitReason) {
		s.Event(corev1.EventTypeWarning, o.waitReason, "Reconcile", o.waitMessage)
	}
	return nil, nil
}

// ensureStorage creates the volume for the dumps when Mooring owns it and it is missing,
// and grows it when spec.storage.size grows.
func (h Handler) ensureStorage(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) error {
	b := s.Object
	want := StorageClaim(b)
	if want == nil {
		return nil // spec.storage.existingClaim: the user's volume
	}
	live := &corev1.PersistentVolumeClaim{}
	err := s.Client.Get(ctx, client.ObjectKeyFromObject(want), live)
	if apierrors.IsNotFound(err) {
		// Unowned: the volume must not be owned by the Backup, or deleting the Backup would
		// take the dumps with it whatever the cleanup policy says.
		created, err := s.CreateOnce(ctx, want, engine.Unowned(), engine.Announce(corev1.EventTypeNormal, engine.EventCreated, "Create", fmt.Sprintf(
			"PersistentVolumeClaim %s created for the dumps; it is kept when the Backup is deleted unless cleanupPolicy is Delete.", want.Name)))
		if err != nil || created {
			return err
		}
		return h.checkStorageOwner(ctx, want)
	}
	if err != nil {
		return fmt.Errorf("get PVC %s: %w", want.Name, err)
	}
	if !isStorageOf(live, b) {
		return fmt.Errorf("PVC %s belongs to %s %s, not to this Backup; set spec.storage.existingClaim",
			live.Name, live.Labels[mooringv1.ComponentLabel], live.Labels[mooringv1.InstanceLabel])
	}
	size := StorageSize(b)
	if have := live.Spec.Resources.Requests[corev1.ResourceStorage]; size.Cmp(have) > 0 {
		patch := client.MergeFrom(live.DeepCopy())
		live.Spec.Resources.Requests[corev1.ResourceStorage] = size
		err := s.Patch(ctx, live, patch, engine.Announce(corev1.EventTypeNormal, engine.EventUpdated, "Resize",
			fmt.Sprintf("PVC %s grown from %s to %s.", live.Name, have.String(), size.String())))
		if err != nil {
			return fmt.Errorf("grow PVC %s to %s (the storage class must allow volume expansion): %w", live.Name, size.String(), err)
		}
	}
	return nil
}

// checkStorageOwner is for a volume that exists but is not in the cache: fine when the
// cache has simply not seen Mooring's own volume yet, an error when somebody else made it.
func (h Handler) checkStorageOwner(ctx context.Context, want *corev1.PersistentVolumeClaim) error {
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	if err := h.APIReader.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
		return fmt.Errorf("get PVC %s: %w", want.Name, err)
	}
	if live.Labels[mooringv1.InstanceLabel] == want.Labels[mooringv1.InstanceLabel] && live.Labels[mooringv1.ComponentLabel] == Component {
		return nil
	}
	return fmt.Errorf("PVC %s exists but was not created by Mooring for this Backup; "+
		"name it in spec.storage.existingClaim to use it, or delete it", want.Name)
}

// isStorageOf reports whether a volume is the one Mooring created for b.
func isStorageOf(pvc *corev1.PersistentVolumeClaim, b *mooringv1.Backup) bool {
	return pvc.Labels[mooringv1.InstanceLabel] == b.Name && pvc.Labels[mooringv1.ComponentLabel] == Component
}

// backupNow starts the Job for the current backup-now value, when there is one and it has
// no Job yet, and trims older finished on-demand Jobs to ManualJobsHistory. It returns
// jobs with the Job it started: its create event does not bring the Backup back (the
// engine's own writes do not), so status must count it now.
//
// One dump at a time per Backup: while another of its dump Jobs runs, the new one is not
// created; running names that Job, and the Job's end brings the Backup back.
func backupNow(ctx context.Context, s *engine.Scope[*mooringv1.Backup], db dump.Database, jobs []batchv1.Job) (_ []batchv1.Job, running string, _ error) {
	b := s.Object
	value := b.Annotations[mooringv1.BackupNowAnnotation]
	current := ""
	if value != "" {
		current = ManualJobName(b, value)
		exists := false
		for _, j := range jobs {
			exists = exists || j.Name == current
		}
		if !exists {
			running = runningJob(jobs)
		}
		if !exists && running == "" {
			// A Job the cache has not seen yet is not created twice: its name stands for
			// the annotation's value, and CreateOnce creates a name once.
			job := ManualJob(b, db, value)
			created, err := s.CreateOnce(ctx, job)
			if err != nil {
				return jobs, "", err
			}
			if created {
				jobs = append(jobs[:len(jobs):len(jobs)], *job)
			}
		}
	}
	var finished []batchv1.Job
	for _, j := range jobs {
		if j.Labels[mooringv1.BackupJobTypeLabel] == JobManual && j.Name != current && jobFinished(&j) {
			finished = append(finished, j)
		}
	}
	// Newest first; names break ties so that every reconcile picks the same Jobs.
	sort.Slice(finished, func(i, k int) bool {
		ti, tk := finished[i].CreationTimestamp, finished[k].CreationTimestamp
		if !ti.Equal(&tk) {
			return tk.Before(&ti)
		}
		return finished[i].Name > finished[k].Name
	})
	for i := ManualJobsHistory; i < len(finished); i++ {
		if err := s.Delete(ctx, &finished[i]); err != nil {
			return jobs, running, err
		}
	}
	return jobs, running, nil
}

// dumpJobs lists the Backup's scheduled and on-demand Jobs from the cache.
func dumpJobs(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) ([]batchv1.Job, error) {
	list := &batchv1.JobList{}
	if err := s.Client.List(ctx, list, client.InNamespace(s.Object.Namespace),
		client.MatchingLabels(engine.Labels(Component, s.Object.Name))); err != nil {
		return nil, fmt.Errorf("list Jobs: %w", err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if t := j.Labels[mooringv1.BackupJobTypeLabel]; t == JobScheduled || t == JobManual {
			out = append(out, j)
		}
	}
	return out, nil
}

// jobFinished reports whether a Job has completed or failed.
func jobFinished(j *batchv1.Job) bool { return engine.JobPhase(j).Finished() }

// SetupWithManager registers the Backup controller with its database index and watches:
// DatabaseClusters (through the index) and every Job of a Backup, including those the
// CronJob owns, mapped back by their labels.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &mooringv1.Backup{}, DatabaseRefField, func(o client.Object) []string {
		return []string{o.(*mooringv1.Backup).Spec.DatabaseRef.Name}
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &mooringv1.Backup{}, ExistingClaimField, func(o client.Object) []string {
		if name := o.(*mooringv1.Backup).Spec.Storage.ExistingClaim; name != "" {
			return []string{name}
		}
		return nil
	}); err != nil {
		return err
	}
	// The manager's cache holds only Mooring's labelled volumes; existingClaim may name
	// any. A second cache holds the metadata (never the spec) of all of them, from the
	// first Backup that names one.
	claims, err := engine.NewReferenceCache(mgr)
	if err != nil {
		return err
	}
	c := mgr.GetClient()
	backups := func() client.ObjectList { return &mooringv1.BackupList{} }
	backupsOfDatabase := engine.EnqueueByIndex(c, backups, DatabaseRefField)
	backupOfJob := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		if l[mooringv1.ComponentLabel] != Component || l[mooringv1.InstanceLabel] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: l[mooringv1.InstanceLabel]}}}
	})
	return engine.SetupWithManager[*mooringv1.Backup](mgr, Handler{APIReader: mgr.GetAPIReader(), Claims: claims}, engine.Options{
		Component: Component, Owns: Owned, MaxConcurrentReconciles: concurrency,
		// Every Job of a Backup (the CronJob's too, which carry its labels) and its volume.
		Watches: []engine.Watch{
			{Object: &batchv1.Job{}, Handler: backupOfJob},
			{Object: &corev1.PersistentVolumeClaim{}, Handler: backupOfJob},
		},
		OnDemand: []engine.OnDemandWatch{{
			Name:   claimsWatch,
			Source: source.Kind(claims, client.Object(pvcMetadata()), engine.EnqueueByIndex(c, backups, ExistingClaimField)),
		}},
	}, func(b *builder.Builder) {
		b.Watches(&v1beta1.DatabaseCluster{}, backupsOfDatabase, builder.WithPredicates(databaseChanged))
	})
}

// databaseChanged passes the DatabaseCluster updates a Backup depends on: its phase, what
// the dump Job is built from, and the start of its deletion. Replica counts and conditions
// change often and matter not.
var databaseChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*v1beta1.DatabaseCluster)
		cur, okNew := e.ObjectNew.(*v1beta1.DatabaseCluster)
		if !okOld || !okNew {
			return true
		}
		return old.Status.Phase != cur.Status.Phase || old.Spec.Version != cur.Spec.Version ||
			old.Spec.SecretName != cur.Spec.SecretName || (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil)
	},
}
