package dashboards

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// job selects the series Prometheus scrapes from Mooring's metrics Service (the job the
// ServiceMonitor's targets get). controller-runtime's and client-go's metrics have the
// same names in every operator built on them, and another operator may have controllers
// named app or backup too; without it, its series would add to Mooring's panels.
const job = `job="mooring-metrics-service"`

// controllers matches Mooring's controllers (and their work queues) by name.
const controllers = job + `,controller=~"app|cache|database|backup"`

// queues matches Mooring's work queues.
const queues = job + `,name=~"app|cache|database|backup"`

// ns restricts resource series to the dashboard's namespace selection.
const ns = `namespace=~"$namespace"`

var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// Files are the dashboards by file name (config/grafana/<name>), in a stable order.
var Files = []struct {
	Name  string
	Build func() (dashboard.Dashboard, error)
}{
	{"mooring-operator.json", Operator},
	{"mooring-fleet.json", Fleet},
	{"mooring-databases-backups.json", DatabasesBackups},
	{"mooring-database.json", Database},
}

// JSON renders a dashboard as the file content: indented, with a trailing newline.
func JSON(d dashboard.Dashboard) ([]byte, error) {
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal dashboard %v: %w", d.Title, err)
	}
	return append(out, '\n'), nil
}

func base(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"mooring"}).
		Refresh("30s").
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus"))
}

// withNamespace adds the namespace selector the resource dashboards filter on.
func withNamespace(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.WithVariable(dashboard.NewQueryVariableBuilder("namespace").
		Label("Namespace").
		Datasource(datasource).
		Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(mooring_resource_info, namespace)")}).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Multi(true).
		IncludeAll(true).
		AllValue(".*"))
}

func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(expr).LegendFormat(legend).Datasource(datasource)
}

// instant is a query for a table: one row per series, now.
func instant(expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(expr).Instant().Format(prometheus.PromQueryFormatTable).Datasource(datasource)
}

func graph(title, unit, description string, targets ...cog.Builder[variants.Dataquery]) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(description).Unit(unit).Datasource(datasource).Height(8).Span(12)
	for _, t := range targets {
		p = p.WithTarget(t)
	}
	return p
}

func single(title, unit, description string, target cog.Builder[variants.Dataquery]) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Description(description).Unit(unit).Datasource(datasource).
		Height(4).Span(6).WithTarget(target)
}

func grid(title, description string, target cog.Builder[variants.Dataquery]) *table.PanelBuilder {
	return table.NewPanelBuilder().Title(title).Description(description).Datasource(datasource).
		Height(8).Span(24).WithTarget(target)
}

// rate is the rate of a counter over Grafana's interval.
func rate(selector string) string { return "rate(" + selector + "[$__rate_interval])" }

// p99 is the 99th percentile of a histogram, by the given labels.
func p99(bucket, by string) string {
	return "histogram_quantile(0.99, sum by (" + by + ", le) (" + rate(bucket) + "))"
}

// Operator shows the controllers themselves: reconcile rate, errors and latency, work
// queues, API requests and child writes, webhooks, leadership and build.
func Operator() (dashboard.Dashboard, error) {
	return base("mooring-operator", "Mooring / Operator",
		"The Mooring controllers: reconciles, work queues, API requests and writes, webhooks, leader election.").
		WithRow(dashboard.NewRowBuilder("Reconciles")).
		WithPanel(graph("Reconciles per second", "reqps", "Reconciles by controller and result.",
			query("sum by (controller, result) ("+rate("controller_runtime_reconcile_total{"+controllers+"}")+")", "{{controller}} {{result}}"))).
		WithPanel(graph("Reconcile errors per second", "reqps", "Reconciles that returned an error, by controller.",
			query("sum by (controller) ("+rate("controller_runtime_reconcile_errors_total{"+controllers+"}")+")", "{{controller}}"))).
		WithPanel(graph("Reconcile latency (p99)", "s", "99th percentile of the time one reconcile takes, by controller.",
			query(p99("controller_runtime_reconcile_time_seconds_bucket{"+controllers+"}", "controller"), "{{controller}}"))).
		WithPanel(graph("Busy workers", "short", "Workers reconciling right now, against the maximum per controller.",
			query("sum by (controller) (controller_runtime_active_workers{"+controllers+"})", "{{controller}} active"),
			query("sum by (controller) (controller_runtime_max_concurrent_reconciles{"+controllers+"})", "{{controller}} max"))).
		WithRow(dashboard.NewRowBuilder("Work queues")).
		WithPanel(graph("Queue depth", "short", "Objects waiting to be reconciled, by controller.",
			query("sum by (name) (workqueue_depth{"+queues+"})", "{{name}}"))).
		WithPanel(graph("Time in queue (p99)", "s", "99th percentile of how long an object waits before its reconcile starts.",
			query(p99("workqueue_queue_duration_seconds_bucket{"+queues+"}", "name"), "{{name}}"))).
		WithRow(dashboard.NewRowBuilder("API server")).
		WithPanel(graph("API requests per second", "reqps", "Requests Mooring sends to the API server, by method and resource (watches counted when opened).",
			query("sum by (method, resource) ("+rate("mooring_api_requests_total")+")", "{{method}} {{resource}}"))).
		WithPanel(graph("Child writes per second", "ops", "Creates, updates and deletes of child objects by kind; on a converged cluster this is zero.",
			query(`sum by (kind, result) (`+rate(`mooring_child_operations_total{result!="skipped"}`)+")", "{{result}} {{kind}}"))).
		WithPanel(graph("Work time (p99)", "s", "99th percentile of how long processing one queued object takes, by controller.",
			query(p99("workqueue_work_duration_seconds_bucket{"+queues+"}", "name"), "{{name}}"))).
		WithPanel(graph("API responses by code", "reqps", "API responses by HTTP status code; 409 are conflicts, 429 throttling.",
			query("sum by (code) ("+rate("rest_client_requests_total{"+job+"}")+")", "{{code}}"))).
		WithRow(dashboard.NewRowBuilder("Webhooks and leadership")).
		WithPanel(graph("Webhook requests per second", "reqps", "Admission and conversion webhook requests by path and response code.",
			query("sum by (webhook, code) ("+rate("controller_runtime_webhook_requests_total{"+job+"}")+")", "{{webhook}} {{code}}"))).
		WithPanel(graph("Leader", "short", "1 for the replica holding the mooring.dev lease; exactly one should.",
			query(`max by (instance) (leader_election_master_status{`+job+`,name="mooring.dev"})`, "{{instance}}"))).
		WithPanel(single("Webhook certificate expires in", "s", "Time left until the soonest-expiring webhook serving certificate of any replica expires.",
			query("min(mooring_webhook_certificate_expiration_timestamp_seconds) - time()", ""))).
		WithPanel(grid("Builds running", "Which version and revision every replica runs.",
			instant("mooring_build_info"))).
		Build()
}

// Fleet shows every resource by kind and phase, and the ones that are not Ready.
func Fleet() (dashboard.Dashboard, error) {
	var kinds []string
	for _, k := range mooringv1.Kinds() {
		kinds = append(kinds, k.Kind)
	}
	b := withNamespace(base("mooring-fleet", "Mooring / Fleet",
		"Every "+strings.Join(kinds[:len(kinds)-1], ", ")+" and "+kinds[len(kinds)-1]+": how many, in which phase, and which are not Ready."))
	// One count per kind of api/v1's list, a row of four.
	for _, k := range kinds {
		b = b.WithPanel(single(k+"s", "short", k+"s in the selected namespaces.", query(`count(mooring_resource_info{kind="`+k+`",`+ns+`})`, "")))
	}
	return b.
		WithPanel(graph("Resources by kind and phase", "short", "How many resources of each kind are in each phase.",
			query("count by (kind, phase) (mooring_resource_info{"+ns+"})", "{{kind}} {{phase}}"))).
		WithPanel(graph("Replicas wanted and available", "short", "Replicas wanted (the spec's count; an autoscaled App's autoscaler's) and replicas available, by kind.",
			query("sum by (kind) (mooring_resource_replicas{"+ns+"})", "{{kind}} wanted"),
			query("sum by (kind) (mooring_resource_available_replicas{"+ns+"})", "{{kind}} available"))).
		WithPanel(grid("Not Ready", "Resources whose Ready condition is not True (paused ones included; see Paused).",
			instant(`mooring_resource_condition{type="Ready",status="True",`+ns+`} == 0`))).
		WithPanel(grid("Paused", "Resources whose reconciliation is paused with the "+mooringv1.PausedAnnotation+" annotation.",
			instant("mooring_resource_paused{"+ns+"} == 1"))).
		Build()
}

// DatabasesBackups shows database instances and the state of every Backup: when it last
// succeeded, whether it is failing, and when it runs next.
func DatabasesBackups() (dashboard.Dashboard, error) {
	return withNamespace(base("mooring-databases-backups", "Mooring / Databases and Backups",
		"DatabaseCluster instances, and every Backup's last success, failures and next run.")).
		WithRow(dashboard.NewRowBuilder("Databases")).
		WithPanel(grid("Ready instances", "Ready instances of every DatabaseCluster (compare with Wanted instances).",
			instant(`mooring_resource_available_replicas{kind="DatabaseCluster",`+ns+`}`))).
		WithPanel(grid("Wanted instances", "spec.replicaCount of every DatabaseCluster.",
			instant(`mooring_resource_replicas{kind="DatabaseCluster",`+ns+`}`))).
		WithPanel(grid("Degraded", "DatabaseClusters with fewer ready instances than wanted; the value is the ready count.",
			instant(`mooring_resource_available_replicas{kind="DatabaseCluster",`+ns+`} < on (kind, namespace, name) mooring_resource_replicas{kind="DatabaseCluster",`+ns+`}`))).
		WithRow(dashboard.NewRowBuilder("Backups")).
		WithPanel(grid("Last success age", "How long ago each Backup last succeeded.",
			instant("time() - mooring_backup_last_success_timestamp_seconds{"+ns+"}"))).
		WithPanel(grid("Failing", "Backups whose last run failed with no success since; the value is when it failed.",
			instant("mooring_backup_last_failure_timestamp_seconds{"+ns+"} unless on (namespace, name) "+
				"(mooring_backup_last_success_timestamp_seconds{"+ns+"} > on (namespace, name) mooring_backup_last_failure_timestamp_seconds{"+ns+"})"))).
		WithPanel(grid("Next run due in", "Time until each Backup's schedule next runs after its last success; negative while that run is under way, or once it failed or was missed (MooringBackupOverdue waits for a second run).",
			instant("mooring_backup_next_schedule_timestamp_seconds{"+ns+"} - time()"))).
		WithPanel(graph("Last success age over time", "s", "Age of the newest successful backup; a saw-tooth resets at every success.",
			query("time() - mooring_backup_last_success_timestamp_seconds{"+ns+"}", "{{namespace}}/{{name}}"))).
		Build()
}

// PanelQueries returns the query expressions of every panel of a dashboard's JSON, by
// panel title (rows, which hold no queries, are left out). Tests use it to check that
// every query parses, uses exported metrics and returns data.
func PanelQueries(data []byte) (map[string][]string, error) {
	var d struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		out[p.Title] = nil
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out, nil
}
