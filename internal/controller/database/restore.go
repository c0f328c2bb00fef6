package database

import (
	"context"
	"fmt"
	"path"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dump"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/jobstatus"
)

// Restoring reads the Backup a cluster is bootstrapped from.
// +kubebuilder:rbac:groups=mooring.dev,resources=backups,verbs=get;list;watch
// Its condition (Restored) and reasons are api/v1beta1's.

const (
	// restoreComponent labels the restore Job's pods: not "database", so that the
	// cluster's Services do not select them; with Mooring's labels, so the cache (which
	// keeps Mooring's pods) has them and their termination message.
	restoreComponent = "database-restore"
)

// RestoreJobName is the Job that loads the cluster's bootstrap dump.
func RestoreJobName(db *v1beta1.DatabaseCluster) string { return dump.JobName(db.Name, "restore") }

// RestoreJob loads spec.bootstrap.backup's dump (the one named, or the newest of the
// Backup's) into the primary, as the superuser over verified TLS with its client
// certificate, with the client of the cluster's server image, reading the Backup's volume
// read-only.
func RestoreJob(db *v1beta1.DatabaseCluster, b *mooringv1.Backup) *batchv1.Job {
	r := dump.Restore{
		Database: dump.Database{
			Engine: db.Spec.Engine, Version: db.Spec.Version, Host: fmt.Sprintf("%s.%s.svc", db.Name, db.Namespace), Port: Port(db),
			Name: defaultDatabase, SecretName: AdminSecretName(db), UsernameKey: UsernameKey, PasswordKey: PasswordKey,
			TLS: &dump.ClientTLS{CASecret: ServerCertSecretName(db), ClientCertSecret: SuperuserClientSecretName(db)},
		},
		Volume: dump.Volume{ClaimName: b.ClaimName(), Path: b.DumpPath()},
		File:   db.Spec.Bootstrap.Backup.Dump,
		Owner:  b.Name,
		Labels: engine.Labels(restoreComponent, db.Name),
	}
	return dump.RestoreJob(RestoreJobName(db), r)
}

// syncRestore loads the bootstrap dump once the primary is ready, and records it in
// status.restoredFrom. It reports whether the cluster's data is complete: true without
// spec.bootstrap or once restored. A failed restore is not retried by itself (a MariaDB
// dump that failed half-way should not be loaded over again unasked): the condition and
// an event say why, and deleting the Job tries again. A succeeded Job is kept as the
// record of the restore; status.restoredFrom is what stops another.
func (h Handler) syncRestore(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], primaryReady bool) (bool, error) {
	db := s.Object
	if db.Spec.Bootstrap == nil || db.Spec.Bootstrap.Backup == nil || db.Status.RestoredFrom != nil {
		return true, nil
	}
	name := db.Spec.Bootstrap.Backup.Name
	job, err := s.Job(ctx, RestoreJobName(db))
	if err != nil {
		return false, err
	}
	if job != nil && !metav1.IsControlledBy(job, db) {
		job = nil
	}
	if job == nil {
		b := &mooringv1.Backup{}
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, b); apierrors.IsNotFound(err) {
			setRestoreCondition(s, metav1.ConditionFalse, v1beta1.ReasonBackupNotFound, fmt.Sprintf(
				"spec.bootstrap.backup.name: Backup %s is not in namespace %s; the cluster stays empty until it is.", name, db.Namespace))
			return false, nil
		} else if err != nil {
			return false, fmt.Errorf("get Backup %s: %w", name, err)
		}
		if !primaryReady {
			setRestoreCondition(s, metav1.ConditionFalse, v1beta1.ReasonWaitingToRestore, fmt.Sprintf(
				"The dump of Backup %s is loaded once the primary is ready.", name))
			return false, nil
		}
		// About to load data: decide on the status as last written, not the cache's copy,
		// which may not have this controller's record of a finished restore yet.
		live := &v1beta1.DatabaseCluster{}
		if err := h.APIReader.Get(ctx, client.ObjectKeyFromObject(db), live); err != nil {
			return false, fmt.Errorf("read DatabaseCluster %s: %w", db.Name, err)
		}
		if live.UID == db.UID && live.Status.RestoredFrom != nil {
			db.Status.RestoredFrom = live.Status.RestoredFrom
			return true, nil
		}
		job = RestoreJob(db, b)
		msg := fmt.Sprintf("Job %s loads %s of Backup %s into the primary.", job.Name, dumpName(db), name)
		if _, err := s.CreateOnce(ctx, job, engine.Announce(corev1.EventTypeNormal, v1beta1.ReasonRestoring, "Restore", msg)); err != nil {
			return false, err
		}
		setRestoreCondition(s, metav1.ConditionFalse, v1beta1.ReasonRestoring, msg)
		return false, nil
	}
	report := h.restoreReport(ctx, s, job)
	switch st := engine.JobPhase(job); st.Phase {
	case jobstatus.Succeeded:
		file := restoredFile(report)
		if file == "" {
			file = db.Spec.Bootstrap.Backup.Dump
		}
		now := metav1.Now()
		db.Status.RestoredFrom = &v1beta1.RestoredFromStatus{Backup: name, Dump: file, Time: &now}
		msg := fmt.Sprintf("Loaded %s of Backup %s (%s).", file, name, strings.TrimPrefix(report, "restore: "))
		s.Event(corev1.EventTypeNormal, v1beta1.ReasonRestoreSucceeded, "Restore", msg)
		setRestoreCondition(s, metav1.ConditionTrue, v1beta1.ReasonRestoreSucceeded, msg)
		// The Job stays, with its log, until the cluster goes (it is the cluster's).
		return true, nil
	case jobstatus.Failed:
		if report == "" {
			report = st.Failure()
		}
		setRestoreCondition(s, metav1.ConditionFalse, v1beta1.ReasonRestoreFailed, fmt.Sprintf(
			"Job %s could not load the dump of Backup %s: %s. The cluster's data is left as it is; fix the cause and delete the Job to try again.",
			job.Name, name, report))
	default:
		setRestoreCondition(s, metav1.ConditionFalse, v1beta1.ReasonRestoring, fmt.Sprintf(
			"Job %s loads %s of Backup %s into the primary.", job.Name, dumpName(db), name))
	}
	return false, nil
}

// dumpName is the dump a restore loads, as messages name it.
func dumpName(db *v1beta1.DatabaseCluster) string {
	if f := db.Spec.Bootstrap.Backup.Dump; f != "" {
		return f
	}
	return "the newest dump"
}

// restoreReport is the restore script's last line, from the termination message of the
// Job's last finished pod (the pods are in the cache with Mooring's labels).
func (h Handler) restoreReport(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], job *batchv1.Job) string {
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{"job-name": job.Name}); err != nil {
		return ""
	}
	report := ""
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if t := c.State.Terminated; t != nil && t.Message != "" {
				report = strings.TrimSpace(t.Message)
			}
		}
	}
	return report
}

// restoredFile is the file name in "restore: restored <path> sha256=...".
func restoredFile(report string) string {
	rest, ok := strings.CutPrefix(report, "restore: restored ")
	if !ok {
		return ""
	}
	p, _, _ := strings.Cut(rest, " ")
	return path.Base(p)
}

// setRestoreCondition sets Restored, with one Warning event when it turns False for a
// reason that needs the user.
func setRestoreCondition(s *engine.Scope[*v1beta1.DatabaseCluster], status metav1.ConditionStatus, reason, msg string) {
	if (reason == v1beta1.ReasonRestoreFailed || reason == v1beta1.ReasonBackupNotFound) && !engine.HasCondition(s.Object, v1beta1.ConditionRestored, status, reason) {
		s.Event(corev1.EventTypeWarning, reason, "Restore", msg)
	}
	engine.SetCondition(s.Object, v1beta1.ConditionRestored, status, reason, msg)
}
