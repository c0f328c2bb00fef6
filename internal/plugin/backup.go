package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/dump"
	"github.com/mooringhq/mooring/internal/jobstatus"
)

// backupOptions are the flags of `backup`.
type backupOptions struct {
	*Options
	wait    bool
	timeout time.Duration
}

func newBackupCommand(o *Options) *cobra.Command {
	bo := &backupOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "backup BACKUP",
		Short: "Start an on-demand backup now (" + mooringv1.BackupNowAnnotation + ")",
		Long: "Start an on-demand backup of a Backup's database now: the " + mooringv1.BackupNowAnnotation + " annotation\n" +
			"is set to a new value, and Mooring starts one Job <backup>-manual-<hash> for it. With --wait,\n" +
			"follow the Job to its end; the command fails when the Job fails.",
		Example:           "  kubectl mooring backup orders-nightly --wait",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeRef("backup"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return bo.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().BoolVar(&bo.wait, "wait", false, "Wait for the backup Job to finish; exit non-zero if it fails.")
	cmd.Flags().DurationVar(&bo.timeout, "timeout", 30*time.Minute, "With --wait, how long to wait for the Job.")
	return cmd
}

// ManualJobName is the Job Mooring starts for one backup-now value: the Backup's name,
// "manual" and a short hash of the value (internal/controller/backup.ManualJobName).
func ManualJobName(backup, value string) string {
	return dump.JobName(backup, "manual-"+dump.ShortHash(value))
}

func (bo *backupOptions) run(ctx context.Context, name string) error {
	c, err := bo.client()
	if err != nil {
		return err
	}
	ns, err := bo.namespace()
	if err != nil {
		return err
	}
	b := &mooringv1.Backup{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		return fmt.Errorf("get backup/%s: %w", name, err)
	}
	value := bo.now().UTC().Format(time.RFC3339Nano)
	if err := annotate(ctx, c, b, mooringv1.BackupNowAnnotation, value); err != nil {
		return fmt.Errorf("trigger backup/%s: %w", name, err)
	}
	job := ManualJobName(name, value)
	fmt.Fprintf(bo.Streams.Out, "backup/%s: on-demand backup requested (%s=%s), Job %s\n", name, mooringv1.BackupNowAnnotation, value, job)
	if !bo.wait {
		return nil
	}
	return bo.follow(ctx, c, b, job)
}

// errBackupFailed is returned when the Job failed; the message says why.
var errBackupFailed = errors.New("backup failed")

// errJobsNotVisible is returned by --wait when RBAC does not let the user read Jobs.
var errJobsNotVisible = errors.New("jobs not visible to you")

// follow waits for the Job to finish. While the Job does not exist yet, the Backup's Ready
// condition says why (e.g. the database is not Running), and that is reported on timeout.
func (bo *backupOptions) follow(ctx context.Context, c client.Client, b *mooringv1.Backup, name string) error {
	start := time.Now() // a duration, so the wall clock, whatever Options.Now says
	key := client.ObjectKey{Namespace: b.Namespace, Name: name}
	var j batchv1.Job
	seen, lastPhase := false, ""
	err := wait.PollUntilContextTimeout(ctx, time.Second, bo.timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, &j); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if apierrors.IsForbidden(err) {
				return false, fmt.Errorf("%w: %w", errJobsNotVisible, err)
			}
			return false, err
		}
		seen = true
		finished := jobstatus.Of(&j).Finished()
		phase := "Pending"
		if j.Status.Active > 0 || j.Status.StartTime != nil {
			phase = "Running"
		}
		if phase != lastPhase && !finished {
			fmt.Fprintf(bo.Streams.Out, "Job %s: %s\n", name, phase)
			lastPhase = phase
		}
		return finished, nil
	})
	if errors.Is(err, errJobsNotVisible) {
		return fmt.Errorf("the backup was requested, but --wait cannot follow Job %s: you may not read Jobs in namespace %s "+
			"(kubectl mooring status backup/%s shows the Backup's last success and failure): %w", name, b.Namespace, b.Name, err)
	}
	if err != nil {
		if seen {
			return fmt.Errorf("job %s did not finish within %s: %w", name, bo.timeout, err)
		}
		why := ""
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err == nil {
			if cond := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionReady); cond != nil && cond.Status != "True" {
				why = ": " + cond.Message
			}
		}
		return fmt.Errorf("mooring started no Job %s within %s%s", name, bo.timeout, why)
	}
	took := time.Since(start).Round(time.Second)
	if failure := jobstatus.Of(&j).Failure(); failure != "" {
		fmt.Fprintf(bo.Streams.Out, "Job %s: Failed after %s: %s\n", name, took, failure)
		return fmt.Errorf("%w: Job %s: %s (kubectl logs -n %s job/%s)", errBackupFailed, name, failure, b.Namespace, name)
	}
	fmt.Fprintf(bo.Streams.Out, "Job %s: Complete after %s\n", name, took)
	return nil
}
