package metrics

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

var (
	resourceLabels = []string{"kind", "namespace", "name"}

	infoDesc = prometheus.NewDesc("mooring_resource_info",
		"Always 1 for every Mooring resource; the phase label is its status.phase.",
		append(resourceLabels, "phase"), nil)
	conditionDesc = prometheus.NewDesc("mooring_resource_condition",
		"A status condition of a Mooring resource as a state set: 1 for the condition's current status (True, False or Unknown), 0 for the other two.",
		append(resourceLabels, "type", "status"), nil)
	pausedDesc = prometheus.NewDesc("mooring_resource_paused",
		"1 while reconciliation of the resource is paused (annotation "+mooringv1.PausedAnnotation+"=true), else 0.",
		resourceLabels, nil)
	replicasDesc = prometheus.NewDesc("mooring_resource_replicas",
		"Replicas (instances) the resource wants: its spec's count, or for an App with spec.autoscaling the autoscaler's (status.desiredReplicas).",
		resourceLabels, nil)
	availableDesc = prometheus.NewDesc("mooring_resource_available_replicas",
		"Replicas (instances) that are available; for a DatabaseCluster, the ready instances.",
		resourceLabels, nil)
	lastSuccessDesc = prometheus.NewDesc("mooring_backup_last_success_timestamp_seconds",
		"When the Backup's last backup succeeded, in seconds since the epoch; absent before the first success.",
		[]string{"namespace", "name"}, nil)
	lastFailureDesc = prometheus.NewDesc("mooring_backup_last_failure_timestamp_seconds",
		"When the Backup's last backup failed, in seconds since the epoch; absent if none ever failed.",
		[]string{"namespace", "name"}, nil)
	nextScheduleDesc = prometheus.NewDesc("mooring_backup_next_schedule_timestamp_seconds",
		"When the Backup's schedule next runs after its last success (or creation): the run expected to produce the next successful backup. In the past while that run is under way, or once it failed or was missed. Absent while suspended or paused.",
		[]string{"namespace", "name"}, nil)
	suspendedDesc = prometheus.NewDesc("mooring_backup_suspended",
		"1 while the Backup's scheduled backups are suspended (spec.suspend), else 0.",
		[]string{"namespace", "name"}, nil)
	deadlineDesc = prometheus.NewDesc("mooring_backup_deadline_timestamp_seconds",
		"When the Backup is overdue unless a new backup succeeds: the second run of its schedule after its last success (or creation), so one failed, missed or still running run alone is not overdue. Absent while suspended or paused.",
		[]string{"namespace", "name"}, nil)
)

var conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

// listTimeout bounds a scrape's reads of the cache; they are in memory and return at once
// on a leader whose informers have synced.
const listTimeout = 10 * time.Second

// ResourceCollector emits the mooring_resource_* and mooring_backup_* series from a reader
// (the manager's cache) when leading says this replica leads.
type ResourceCollector struct {
	reader  client.Reader
	leading func() bool
	log     logr.Logger
}

// NewResourceCollector returns a collector over reader that emits series only while
// leading returns true.
func NewResourceCollector(reader client.Reader, leading func() bool, log logr.Logger) *ResourceCollector {
	return &ResourceCollector{reader: reader, leading: leading, log: log}
}

// Describe sends every descriptor the collector may emit.
func (c *ResourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{infoDesc, conditionDesc, pausedDesc, replicasDesc, availableDesc,
		lastSuccessDesc, lastFailureDesc, nextScheduleDesc, deadlineDesc, suspendedDesc, lastBackupDesc} {
		ch <- d
	}
}

// Collect lists Mooring's kinds from the reader and emits their series.
func (c *ResourceCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.leading() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	resources, err := c.list(ctx)
	if err != nil {
		// A partial answer would look like deleted objects; report nothing for this
		// scrape and say why in the log.
		c.log.Error(err, "Unable to list resources for metrics")
		return
	}
	for _, r := range resources {
		emit(ch, r)
	}
	emitDatabaseBackups(ch, resources)
}

func (c *ResourceCollector) list(ctx context.Context) ([]resource, error) {
	var out []resource
	for _, k := range mooringv1.Kinds() {
		lister, ok := listers[k.Kind]
		if !ok {
			continue // not measured (TestEveryKindIsCollected fails)
		}
		rs, err := lister(ctx, c.reader)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// listers list the objects of each of api/v1's Kinds, by kind, as resources.
var listers = map[string]func(context.Context, client.Reader) ([]resource, error){
	mooringv1.KindApp: func(ctx context.Context, r client.Reader) ([]resource, error) {
		return listAs(ctx, r, &mooringv1.AppList{}, func(l *mooringv1.AppList) []mooringv1.App { return l.Items }, fromApp)
	},
	mooringv1.KindCacheInstance: func(ctx context.Context, r client.Reader) ([]resource, error) {
		return listAs(ctx, r, &mooringv1.CacheInstanceList{}, func(l *mooringv1.CacheInstanceList) []mooringv1.CacheInstance { return l.Items }, fromCache)
	},
	mooringv1.KindDatabaseCluster: func(ctx context.Context, r client.Reader) ([]resource, error) {
		return listAs(ctx, r, &v1beta1.DatabaseClusterList{}, func(l *v1beta1.DatabaseClusterList) []v1beta1.DatabaseCluster { return l.Items }, fromDatabase)
	},
	mooringv1.KindBackup: func(ctx context.Context, r client.Reader) ([]resource, error) {
		return listAs(ctx, r, &mooringv1.BackupList{}, func(l *mooringv1.BackupList) []mooringv1.Backup { return l.Items }, fromBackup)
	},
}

// listAs lists one kind and converts each item.
func listAs[L client.ObjectList, T any](ctx context.Context, r client.Reader, list L, items func(L) []T, from func(*T) resource) ([]resource, error) {
	if err := r.List(ctx, list); err != nil {
		return nil, err
	}
	all := items(list)
	out := make([]resource, 0, len(all))
	for i := range all {
		out = append(out, from(&all[i]))
	}
	return out, nil
}

func emit(ch chan<- prometheus.Metric, r resource) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	id := []string{r.kind, r.namespace, r.name}
	gauge(infoDesc, 1, append(id, r.phase)...)
	for _, cond := range r.conditions {
		for _, s := range conditionStatuses {
			gauge(conditionDesc, boolValue(cond.Status == s), append(id, cond.Type, string(s))...)
		}
	}
	gauge(pausedDesc, boolValue(r.paused), id...)
	if r.replicas != nil {
		gauge(replicasDesc, float64(*r.replicas), id...)
	}
	if r.available != nil {
		gauge(availableDesc, float64(*r.available), id...)
	}
	if b := r.backup; b != nil {
		gauge(suspendedDesc, boolValue(b.suspended), r.namespace, r.name)
		for d, t := range map[*prometheus.Desc]time.Time{
			lastSuccessDesc: b.lastSuccess, lastFailureDesc: b.lastFailure, nextScheduleDesc: b.nextSchedule,
			deadlineDesc: b.deadline,
		} {
			if !t.IsZero() {
				gauge(d, float64(t.Unix()), r.namespace, r.name)
			}
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
