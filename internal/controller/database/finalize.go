package database

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dump"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/jobstatus"
)

// The final snapshot runs a Job and may create a PVC for it; it writes into the volume of a
// Backup that targets the cluster, which it finds by listing Backups.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=create
// +kubebuilder:rbac:groups=mooring.dev,resources=backups,verbs=get;list;watch

const (
	// SkipFinalSnapshotAnnotation set to "true" lets a cluster whose final snapshot cannot
	// be taken be deleted without one (the API's name, which the webhook reads too).
	SkipFinalSnapshotAnnotation = v1beta1.SkipFinalSnapshotAnnotation

	// snapshotComponent labels the snapshot's pods and own PVC: not "database", so that
	// neither the cluster's Services nor its data volume list pick them up.
	snapshotComponent = "final-snapshot"
	// SnapshotPrefix starts a final snapshot's file name; retention never prunes it.
	SnapshotPrefix = "final-snapshot-"
	// defaultDatabase is what pg_dump dumps: PostgreSQL's default database, the one the
	// instance manager gives the application user.
	defaultDatabase = "postgres"
	// snapshotPoll is how often Finalize looks at the snapshot Job. The Job has no owner
	// reference to the cluster, so the Job watch (which maps Jobs by their controller)
	// does not bring the cluster back when it finishes or is deleted.
	snapshotPoll = 5 * time.Second
	// lookAgain is how soon Finalize comes back after a step it must see settled (the
	// snapshot's success recorded in status, the volumes made safe): neither a status
	// write nor a patch of the StatefulSet or a PVC brings the cluster back by itself.
	lookAgain = time.Second
)

// DumpTarget is how a dump Job reaches the cluster: its primary Service, over TLS with
// the server verified, its credentials Secret, and a client image of the same version.
func DumpTarget(db *v1beta1.DatabaseCluster) dump.Database {
	name := ""
	if db.Spec.Engine == v1beta1.PostgreSQL {
		name = defaultDatabase
	}
	return dump.Database{
		Engine: db.Spec.Engine, Version: db.Spec.Version,
		Host: fmt.Sprintf("%s.%s.svc", db.Name, db.Namespace), Port: Port(db), Name: name,
		SecretName: db.Spec.SecretName, UsernameKey: UsernameKey, PasswordKey: PasswordKey,
		TLS: &dump.ClientTLS{CASecret: ServerCertSecretName(db)},
	}
}

// FinalSnapshotJobName is the Job that takes the final snapshot.
func FinalSnapshotJobName(db *v1beta1.DatabaseCluster) string {
	return dump.JobName(db.Name, "final-snapshot")
}

// FinalSnapshotClaimName is the PVC Mooring creates for the final snapshot when no Backup
// targets the cluster. It has no owner: it outlives the cluster.
func FinalSnapshotClaimName(db *v1beta1.DatabaseCluster) string { return db.Name + "-final-snapshot" }

// FinalSnapshotClaim is that PVC, as large as one data volume (a compressed dump is smaller).
func FinalSnapshotClaim(db *v1beta1.DatabaseCluster) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: FinalSnapshotClaimName(db), Namespace: db.Namespace,
			Labels: engine.Labels(snapshotComponent, db.Name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: db.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: StorageSize(db)},
			},
		},
	}
}

// FinalSnapshotJob dumps the cluster once into vol, as final-snapshot-<name>-<timestamp>.sql.gz.
// It carries the cluster's labels, which keep it in the cache, and its UID, but no owner
// reference (mooringv1.FinalizingUIDAnnotation says why).
func FinalSnapshotJob(db *v1beta1.DatabaseCluster, vol dump.Volume) *batchv1.Job {
	template := dump.PodTemplate(dump.Dump{
		Database: DumpTarget(db), Volume: vol, Prefix: SnapshotPrefix + db.Name + "-",
		Labels: engine.Labels(snapshotComponent, db.Name),
	})
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: FinalSnapshotJobName(db), Namespace: db.Namespace,
			Labels:      engine.Labels(Component, db.Name),
			Annotations: map[string]string{mooringv1.FinalizingUIDAnnotation: string(db.UID)}},
		Spec: dump.JobSpec(template),
	}
}

// SnapshotVolume chooses where the final snapshot goes: the volume of the first (by name)
// Backup of the cluster that keeps its dumps (cleanupPolicy Retain) and is not being
// deleted; otherwise Mooring's own PVC, claim nil when it must still be created. A Backup
// whose own volume was never created (it never ran) is passed over.
func SnapshotVolume(db *v1beta1.DatabaseCluster, backups []mooringv1.Backup, existingClaims map[string]bool) (dump.Volume, *corev1.PersistentVolumeClaim) {
	sort.Slice(backups, func(i, j int) bool { return backups[i].Name < backups[j].Name })
	for i := range backups {
		b := &backups[i]
		if b.Spec.DatabaseRef.Name != db.Name || b.DeletionTimestamp != nil || b.Spec.CleanupPolicy == mooringv1.CleanupDelete {
			continue
		}
		if b.Spec.Storage.ExistingClaim == "" && !existingClaims[b.ClaimName()] {
			continue
		}
		return dump.Volume{ClaimName: b.ClaimName(), Path: b.DumpPath()}, nil
	}
	vol := dump.Volume{ClaimName: FinalSnapshotClaimName(db), Path: "/"}
	if existingClaims[vol.ClaimName] {
		return vol, nil
	}
	return vol, FinalSnapshotClaim(db)
}

// Finalizer is the final-snapshot finalizer under deletionPolicy Snapshot and the volumes
// finalizer otherwise: every cluster has one, so that the volumes are kept as the spec
// says even when the StatefulSet was never told (finalize_volumes.go). It is added once,
// when the cluster is first reconciled, and swapped only when the policy changes.
func (Handler) Finalizer(db *v1beta1.DatabaseCluster) string {
	if db.Spec.DeletionPolicy == v1beta1.DeletionSnapshot {
		return v1beta1.FinalSnapshotFinalizer
	}
	return v1beta1.VolumesFinalizer
}

// Finalize first makes the live StatefulSet and PVCs keep the data volumes when the spec
// says to keep them (finalize_volumes.go), even when the cluster is paused. Under
// deletionPolicy Snapshot it then takes the final snapshot: it starts the Job, and lets
// the cluster go only once the Job has succeeded or the skip annotation says to go
// without one. A cluster whose primary has no data volume (it never started, or the PVC
// was deleted) has nothing to snapshot and goes at once, with a Warning event. Every wait
// is reported in status and events. The checks run in order; the first that ends the run
// decides whether the cluster goes now or what it waits for.
func (h Handler) Finalize(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (bool, ctrl.Result, error) {
	s.Object.Status.Phase = v1beta1.DatabaseDeleting
	f := &finalSnapshot{h: h, s: s, db: s.Object}
	v, err := engine.RunSteps(ctx, f.volumesProtected, f.snapshotWanted, f.notSkipped, f.notTakenYet, f.jobStarted, f.jobOurs, f.jobOutcome)
	if err != nil || !v.Done() {
		return false, v.Result(), err
	}
	return release(ctx, s)
}

// finalSnapshot is one reconcile's run of the deletion checks, in the order Finalize
// lists them: the first that ends the run says whether the cluster may go (Done) or what
// it waits for.
type finalSnapshot struct {
	h  Handler
	s  *engine.Scope[*v1beta1.DatabaseCluster]
	db *v1beta1.DatabaseCluster
	// job is the final snapshot Job, once jobStarted found it.
	job *batchv1.Job
}

// volumesProtected makes the volumes safe first, and looks again after a change before
// the cluster goes: the StatefulSet controller may have given a PVC an owner under the
// old policy meanwhile.
func (f *finalSnapshot) volumesProtected(ctx context.Context) (engine.Verdict, error) {
	changed, err := f.h.protectVolumes(ctx, f.s)
	if err != nil || !changed {
		return engine.Next, err
	}
	return engine.Wait(lookAgain), nil
}

// snapshotWanted lets a cluster go at once unless deletionPolicy is Snapshot.
func (f *finalSnapshot) snapshotWanted(context.Context) (engine.Verdict, error) {
	if f.db.Spec.DeletionPolicy != v1beta1.DeletionSnapshot {
		return engine.Done(), nil
	}
	return engine.Next, nil
}

// notSkipped lets the cluster go without a snapshot when the annotation asks.
func (f *finalSnapshot) notSkipped(context.Context) (engine.Verdict, error) {
	if f.db.Annotations[SkipFinalSnapshotAnnotation] != "true" {
		return engine.Next, nil
	}
	f.s.Event(corev1.EventTypeWarning, v1beta1.ReasonSnapshotSkipped, "Finalize",
		"Deleted without a final snapshot, as the "+SkipFinalSnapshotAnnotation+" annotation asks.")
	return engine.Done(), nil
}

// notTakenYet lets the cluster go once an earlier reconcile recorded the snapshot.
func (f *finalSnapshot) notTakenYet(context.Context) (engine.Verdict, error) {
	if engine.HasCondition(f.db, v1beta1.ConditionFinalSnapshot, metav1.ConditionTrue, v1beta1.ReasonSnapshotTaken) {
		return engine.Done(), nil
	}
	return engine.Next, nil
}

// jobStarted finds the snapshot Job, or starts it; a cluster whose primary has no data
// volume has nothing to snapshot and goes at once, with a Warning event.
func (f *finalSnapshot) jobStarted(ctx context.Context) (engine.Verdict, error) {
	db := f.db
	job, err := f.s.Job(ctx, FinalSnapshotJobName(db))
	if err != nil || job != nil {
		f.job = job
		return engine.Next, err
	}
	// No primary volume, no data: the Job would wait for a database that never comes.
	claim := PrimaryClaimName(db)
	exists, err := f.h.claimExists(ctx, f.s, claim)
	if err != nil {
		return engine.Next, err
	}
	if !exists {
		f.s.Event(corev1.EventTypeWarning, v1beta1.ReasonNothingToSnapshot, "Finalize", fmt.Sprintf(
			"Deleted without a final snapshot: the primary's data volume (PVC %s) does not exist, so there is nothing to snapshot.", claim))
		return engine.Done(), nil
	}
	if err := f.h.startFinalSnapshot(ctx, f.s); err != nil {
		return engine.Next, err
	}
	return engine.Wait(snapshotPoll), nil
}

// jobOurs deletes a Job left by an earlier cluster of the same name (its finalizer was
// removed by hand): its outcome says nothing about this cluster's data.
func (f *finalSnapshot) jobOurs(ctx context.Context) (engine.Verdict, error) {
	if isFinalSnapshotJobOf(f.job, f.db) {
		return engine.Next, nil
	}
	if err := f.s.DeleteExact(ctx, f.job, ""); err != nil {
		return engine.Next, err
	}
	return engine.Wait(snapshotPoll), nil
}

// jobOutcome records the snapshot's success, or reports its failure or progress. Every
// wait is polled (snapshotPoll); a status that does not change is not written.
func (f *finalSnapshot) jobOutcome(context.Context) (engine.Verdict, error) {
	db, job := f.db, f.job
	where := describeVolume(job)
	switch st := engine.JobPhase(job); st.Phase {
	case jobstatus.Succeeded:
		// Recorded in status now; the next reconcile deletes the Job and lets the cluster
		// go. Deleted at once, a finalizer patch that then failed (an optimistic-lock
		// conflict, say) would find no Job on the retry and take the snapshot again.
		text := fmt.Sprintf("Final snapshot written by Job %s to %s; deleting the cluster.", job.Name, where)
		f.s.Event(corev1.EventTypeNormal, v1beta1.ReasonSnapshotTaken, "Finalize", text)
		setDeleting(db, metav1.ConditionTrue, v1beta1.ReasonSnapshotTaken, text)
		return engine.Wait(lookAgain), nil
	case jobstatus.Failed:
		text := fmt.Sprintf("Final snapshot Job %s failed (%s). The cluster is kept until a snapshot succeeds: "+
			"fix the cause and delete the Job to try again, or annotate %s=true to delete without a snapshot.",
			job.Name, st.Failure(), SkipFinalSnapshotAnnotation)
		if !engine.HasCondition(db, v1beta1.ConditionFinalSnapshot, metav1.ConditionFalse, v1beta1.ReasonSnapshotFailed) {
			f.s.Event(corev1.EventTypeWarning, v1beta1.ReasonSnapshotFailed, "Finalize", text)
		}
		setDeleting(db, metav1.ConditionFalse, v1beta1.ReasonSnapshotFailed, text)
	default:
		setDeleting(db, metav1.ConditionUnknown, v1beta1.ReasonSnapshotInProgress, fmt.Sprintf(
			"Waiting for final snapshot Job %s to write to %s before the cluster is deleted.", job.Name, where))
	}
	return engine.Wait(snapshotPoll), nil
}

// isFinalSnapshotJobOf reports whether job was made for this cluster (not for an earlier
// one of the same name): it carries the cluster's UID, or, made by an earlier version of
// Mooring, the cluster's controller reference.
func isFinalSnapshotJobOf(job *batchv1.Job, db *v1beta1.DatabaseCluster) bool {
	return job.Annotations[mooringv1.FinalizingUIDAnnotation] == string(db.UID) || metav1.IsControlledBy(job, db)
}

// release lets the cluster go, and its snapshot Job with it if one was started: nothing
// else would ever delete a Job without an owner.
func release(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (bool, ctrl.Result, error) {
	db := s.Object
	job, err := s.Job(ctx, FinalSnapshotJobName(db))
	if err == nil && job != nil && isFinalSnapshotJobOf(job, db) {
		err = s.DeleteExact(ctx, job, "")
	}
	if err != nil {
		return false, ctrl.Result{}, fmt.Errorf("delete the final snapshot Job: %w", err)
	}
	return true, ctrl.Result{}, nil
}

// PrimaryClaimName is the primary's data PVC, made by the StatefulSet from its claim
// template: data-<name>-0.
func PrimaryClaimName(db *v1beta1.DatabaseCluster) string {
	return DataVolume + "-" + PrimaryPodName(db)
}

// claimExists reads the PVC on the API server rather than the cache, which holds only
// PVCs with Mooring's labels: a snapshot is skipped only for a volume that is really gone.
func (h Handler) claimExists(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], name string) (bool, error) {
	var reader client.Reader = s.Client
	if h.APIReader != nil {
		reader = h.APIReader
	}
	err := reader.Get(ctx, client.ObjectKey{Namespace: s.Object.Namespace, Name: name}, &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("get PVC %s: %w", name, err)
	}
}

// startFinalSnapshot creates the snapshot's volume when needed and its Job.
func (h Handler) startFinalSnapshot(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) error {
	db := s.Object
	backups := &mooringv1.BackupList{}
	if err := s.Client.List(ctx, backups, client.InNamespace(db.Namespace)); err != nil {
		return fmt.Errorf("list Backups: %w", err)
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := s.Client.List(ctx, claims, client.InNamespace(db.Namespace)); err != nil {
		return fmt.Errorf("list PVCs: %w", err)
	}
	existing := map[string]bool{}
	for _, c := range claims.Items {
		existing[c.Name] = true
	}
	vol, claim := SnapshotVolume(db, backups.Items, existing)
	if claim != nil {
		// Without an owner reference: the snapshot must outlive the cluster.
		_, err := s.CreateOnce(ctx, claim, engine.Unowned(), engine.Announce(corev1.EventTypeNormal, engine.EventCreated, "Finalize",
			fmt.Sprintf("Created PVC %s for the final snapshot; it is kept after the cluster is deleted.", claim.Name)))
		if err != nil {
			return fmt.Errorf("the final snapshot's volume: %w", err)
		}
	}
	job := FinalSnapshotJob(db, vol)
	text := fmt.Sprintf("Taking a final snapshot with Job %s into %s; the cluster is deleted when it succeeds.", job.Name, describeVolume(job))
	created, err := s.CreateOnce(ctx, job, engine.Unowned(), engine.Announce(corev1.EventTypeNormal, engine.EventFinalizing, "Finalize", text))
	if err != nil {
		return err
	}
	if !created {
		// The cache has not seen it yet (the next poll reads it), or it is not Mooring's.
		return h.checkJobIsMooring(ctx, job)
	}
	setDeleting(db, metav1.ConditionUnknown, v1beta1.ReasonSnapshotInProgress, text)
	return nil
}

// checkJobIsMooring fails when the Job of job's name that exists (past the cache) was not
// made by Mooring for this cluster: waiting for it would be waiting for ever.
func (h Handler) checkJobIsMooring(ctx context.Context, job *batchv1.Job) error {
	if h.APIReader == nil {
		return nil
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("Job"))
	if err := h.APIReader.Get(ctx, client.ObjectKeyFromObject(job), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if live.Labels[mooringv1.InstanceLabel] != job.Labels[mooringv1.InstanceLabel] || live.Labels[mooringv1.ComponentLabel] != Component {
		return fmt.Errorf("job %s exists and was not created by Mooring for this cluster; delete it so the final snapshot can be taken", job.Name)
	}
	return nil
}

// setDeleting reports what deletion waits for, in FinalSnapshot and in Ready.
func setDeleting(db *v1beta1.DatabaseCluster, status metav1.ConditionStatus, reason, msg string) {
	engine.SetCondition(db, v1beta1.ConditionFinalSnapshot, status, reason, msg)
	engine.SetCondition(db, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonDeleting, msg)
}

// describeVolume says where a dump Job writes: "PVC x, directory /d".
func describeVolume(job *batchv1.Job) string {
	spec := job.Spec.Template.Spec
	claim, dir := "", ""
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if len(spec.Containers) > 0 {
		for _, e := range spec.Containers[0].Env {
			if e.Name == "BACKUP_DIR" {
				dir = e.Value
			}
		}
	}
	return fmt.Sprintf("PVC %s (directory %s in the pod)", claim, dir)
}
