package metrics

import (
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// resource is what the collector reports about one object, whatever its kind.
type resource struct {
	kind, namespace, name, phase string
	conditions                   []metav1.Condition
	paused                       bool
	// replicas (wanted) and available are nil for kinds without replicas.
	replicas, available *int32
	backup              *backupTimes
	// database is set for DatabaseClusters.
	database *databaseFacts
}

// databaseFacts are what the backup age of a DatabaseCluster needs of it.
type databaseFacts struct {
	created time.Time
}

// backupTimes are a Backup's timestamps (zero times are not reported) and whether its
// schedule is suspended.
type backupTimes struct {
	lastSuccess, lastFailure, nextSchedule, deadline time.Time
	suspended                                        bool
	// database is the DatabaseCluster the Backup dumps (spec.databaseRef.name).
	database string
}

func newResource(kind string, obj metav1.Object, phase string, conds []metav1.Condition) resource {
	return resource{
		kind: kind, namespace: obj.GetNamespace(), name: obj.GetName(), phase: phase,
		conditions: conds, paused: obj.GetAnnotations()[mooringv1.PausedAnnotation] == "true",
	}
}

// replicasOr1 is the API's default for an unset replica count.
func replicasOr1(n *int32) *int32 {
	if n == nil {
		one := int32(1)
		return &one
	}
	return n
}

func fromApp(a *mooringv1.App) resource {
	r := newResource(mooringv1.KindApp, a, string(a.Status.Phase), a.Status.Conditions)
	r.replicas, r.available = appWanted(a), &a.Status.AvailableReplicas
	return r
}

// appWanted is the replica count an App's available replicas are measured against. While
// spec.autoscaling is set the HorizontalPodAutoscaler owns the count and spec.replicas is
// ignored (and frozen), so it is the autoscaler's count the operator reports in
// status.desiredReplicas; spec.replicas would show a scaled-out App as over-provisioned
// and a scaled-in one as degraded. Before the first reconcile reports one (no phase yet;
// a reported 0 is a Deployment scaled to zero by hand), it is the count the operator
// starts from: 1 moved into [minReplicas, maxReplicas].
func appWanted(a *mooringv1.App) *int32 {
	as := a.Spec.Autoscaling
	if as == nil {
		return replicasOr1(a.Spec.Replicas)
	}
	if a.Status.Phase != "" {
		return &a.Status.DesiredReplicas
	}
	first := min(max(1, ptr.Deref(as.MinReplicas, 1)), as.MaxReplicas)
	return &first
}

func fromCache(c *mooringv1.CacheInstance) resource {
	r := newResource(mooringv1.KindCacheInstance, c, string(c.Status.Phase), c.Status.Conditions)
	r.replicas, r.available = replicasOr1(c.Spec.Replicas), &c.Status.AvailableReplicas
	return r
}

func fromDatabase(d *v1beta1.DatabaseCluster) resource {
	r := newResource(mooringv1.KindDatabaseCluster, d, string(d.Status.Phase), d.Status.Conditions)
	// An unset replicaCount means one instance. A database's instances are available when
	// they are ready to accept connections: readyReplicas.
	wanted := max(d.Spec.ReplicaCount, 1)
	r.replicas, r.available = &wanted, &d.Status.ReadyReplicas
	r.database = &databaseFacts{created: d.CreationTimestamp.Time}
	return r
}

func fromBackup(b *mooringv1.Backup) resource {
	r := newResource(mooringv1.KindBackup, b, string(b.Status.Phase), b.Status.Conditions)
	t := &backupTimes{suspended: b.Spec.Suspend, database: b.Spec.DatabaseRef.Name}
	if b.Status.LastSuccessfulTime != nil {
		t.lastSuccess = b.Status.LastSuccessfulTime.Time
	}
	if b.Status.LastFailedTime != nil {
		t.lastFailure = b.Status.LastFailedTime.Time
	}
	t.nextSchedule = NextDue(b)
	t.deadline = Deadline(b)
	r.backup = t
	return r
}

// NextDue is when the Backup's own schedule next runs after its last successful backup
// (or, before the first success, after the Backup was created): the run expected to
// produce the next successful backup. While backups succeed on schedule it is in the
// future; it is in the past while that run is under way (a backup that takes an hour is
// an hour past it every night), and once the run failed or was missed.
// It is zero when nothing is due: the schedule is suspended, the Backup is paused, or
// the schedule does not parse (admission rejects those).
func NextDue(b *mooringv1.Backup) time.Time {
	sched, from, ok := schedule(b)
	if !ok {
		return time.Time{}
	}
	return sched.Next(from)
}

// Deadline is when the Backup is overdue unless a new backup succeeds: the second run of
// its schedule after its last success (or creation). A single run that fails, is missed
// or is still running when NextDue passes is not yet overdue, whatever the reason; no
// success in two runs is, failures included, so a Backup that fails every run escalates.
// It is zero when NextDue is.
func Deadline(b *mooringv1.Backup) time.Time {
	sched, from, ok := schedule(b)
	if !ok {
		return time.Time{}
	}
	return sched.Next(sched.Next(from))
}

// schedule is the Backup's parsed schedule and the time its due runs count from: the
// last success, or the creation before the first. ok is false when nothing is due.
func schedule(b *mooringv1.Backup) (sched cron.Schedule, from time.Time, ok bool) {
	if b.Spec.Suspend || b.GetAnnotations()[mooringv1.PausedAnnotation] == "true" {
		return nil, time.Time{}, false
	}
	sched, err := cron.ParseStandard(b.Spec.Schedule)
	if err != nil {
		return nil, time.Time{}, false
	}
	from = b.CreationTimestamp.Time
	if b.Status.LastSuccessfulTime != nil && b.Status.LastSuccessfulTime.After(from) {
		from = b.Status.LastSuccessfulTime.Time
	}
	// CronJobs run in the kube-controller-manager's time zone, UTC in practice, unless
	// the schedule names one (CRON_TZ=...), which ParseStandard honours.
	return sched, from.UTC(), true
}
