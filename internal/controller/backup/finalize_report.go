package backup

import (
	"context"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/dump"
	"github.com/mooringhq/mooring/internal/engine"
)

// The cleanup Job reads its pod's termination message to learn what the cleanup left.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list

// The volume Mooring made for a Backup may hold more than the Backup's dumps: a
// DatabaseCluster's final snapshot is written into it (database.SnapshotVolume), and
// anybody may copy files in. The cleanup removes only the Backup's own dumps; deleting the
// claim would take the rest with it. So the cleanup script reports what is left in the
// whole volume in its termination message (dump/cleanup.sh), and the claim is deleted
// only when that report says nothing is.

// reportFile is where the cleanup script writes its report: the container's termination
// message, which the kubelet copies into the pod's status.
const reportFile = corev1.TerminationMessagePathDefault

// withReport makes the cleanup pod of a Backup's own volume report what is left in the
// whole volume (not only in backupPath: the claim is deleted whole).
func withReport(template corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	c := &template.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: "VOLUME_ROOT", Value: dump.MountPath}, corev1.EnvVar{Name: "REPORT_FILE", Value: reportFile})
	return template
}

// leftovers reads the report of the cleanup Job's succeeded pod: empty when nothing but
// the Backup's dumps was in the volume, otherwise what was left ("it holds 2 files that
// are not the Backup's dumps (a, b)"), or why that is not known (no pod, no report). Only
// an explicit foreign=0 lets the claim go.
func (h Handler) leftovers(ctx context.Context, job *batchv1.Job) (string, error) {
	pods := &corev1.PodList{}
	if err := h.APIReader.List(ctx, pods, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return "", fmt.Errorf("list the pods of Job %s: %w", job.Name, err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			if t := c.State.Terminated; t != nil && t.ExitCode == 0 {
				return parseReport(t.Message), nil
			}
		}
	}
	return fmt.Sprintf("the cleanup's report of what is left in it is missing (no succeeded pod of Job %s)", job.Name), nil
}

// parseReport turns the cleanup script's report, "foreign=<n>" then one file a line, into
// leftovers' answer.
func parseReport(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	count, ok := strings.CutPrefix(lines[0], "foreign=")
	switch {
	case !ok:
		return "the cleanup's report of what is left in it cannot be read"
	case count == "0":
		return ""
	case count == "unknown":
		return "the cleanup could not list everything in it"
	}
	return fmt.Sprintf("it holds %s files that are not the Backup's dumps (%s)", count, strings.Join(lines[1:], ", "))
}

// keepStorage records on the kept claim, and in a Warning event, why it is not deleted, and
// returns that for the Backup's condition.
func keepStorage(ctx context.Context, s *engine.Scope[*mooringv1.Backup], claim *corev1.PersistentVolumeClaim, why string) (string, error) {
	msg := fmt.Sprintf("PVC %s is kept although cleanupPolicy is Delete: the Backup's dumps were removed, but %s. "+
		"Delete the PVC by hand once its content is safe elsewhere.", claim.Name, why)
	live := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(claim), live); err != nil {
		return msg, client.IgnoreNotFound(err)
	}
	if live.Annotations[mooringv1.StorageKeptAnnotation] != msg {
		patch := client.MergeFrom(live.DeepCopy())
		if live.Annotations == nil {
			live.Annotations = map[string]string{}
		}
		live.Annotations[mooringv1.StorageKeptAnnotation] = msg
		// The Warning event below reports it.
		if err := s.Patch(ctx, live, patch, engine.Silent()); client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("annotate PVC %s: %w", claim.Name, err)
		}
	}
	s.Event(corev1.EventTypeWarning, mooringv1.ReasonStorageKept, "Finalize", msg)
	return msg, nil
}
