package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// condition is one condition of an object, with how it reads (conditionHealth).
type condition struct {
	Type, Status, Reason, Message string
	// Health is healthy, unhealthy or pending.
	Health string
}

// event is one event of an object.
type event struct {
	Type, Reason, Message, Age string
	Count                      int32
}

// detail is an extra fact of a row (a database's endpoint, a backup's next run).
type detail struct {
	Label, Value string
}

// row is one object of a namespace page.
type row struct {
	Name, Phase string
	Cells       []string
	Paused      bool
	Deleting    bool
	// Replicas is the desired count, the scale form's value.
	Replicas   string
	Conditions []condition
	// Health sums up the conditions (rowHealth).
	Health  string
	Details []detail
}

// section is one kind on a namespace page, with the controls RBAC allows.
type section struct {
	*kindSpec
	Rows  []row
	Error string
	// Controls the caller's RBAC allows; the template shows only these.
	CanCreate, CanUpdate, CanPatch, CanDelete bool
}

// nsView is a namespace page's live part.
type nsView struct {
	Namespace string
	Sections  []section
	// Version changes whenever anything shown changes (the ETag of the live part).
	Version string
}

// age formats a duration like kubectl does.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func timeField(obj map[string]any, path string) (time.Time, bool) {
	s := fieldString(obj, path)
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// makeRow is what a namespace page shows of obj: only obj itself, so that a page of
// many objects costs one list per kind (events, pods and logs are on the object page).
func makeRow(k *kindSpec, obj *unstructured.Unstructured, now time.Time) row {
	o := obj.Object
	r := row{Name: obj.GetName(), Phase: fieldString(o, "status.phase"),
		Paused:   obj.GetAnnotations()[mooringv1.PausedAnnotation] == "true",
		Deleting: obj.GetDeletionTimestamp() != nil}
	if k.ReplicasPath != "" {
		r.Replicas = fieldString(o, k.ReplicasPath)
	}
	for _, c := range k.Columns {
		v := fieldString(o, c.Path)
		if c.Date {
			if t, ok := timeField(o, c.Path); ok {
				v = age(now.Sub(t))
			}
		}
		r.Cells = append(r.Cells, v)
	}
	conds, _, _ := unstructured.NestedSlice(o, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		status, _ := m["status"].(string)
		t, _ := m["type"].(string)
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		r.Conditions = append(r.Conditions, condition{Type: t, Status: status, Reason: reason, Message: msg,
			Health: conditionHealth(t, status, reason)})
	}
	r.Health = rowHealth(r.Conditions)
	switch k.Kind {
	case mooringv1.KindDatabaseCluster:
		secret := fieldString(o, "spec.secretName")
		if secret == "" {
			secret = v1beta1.CredentialsSecretName(obj.GetName())
		}
		endpoint := fieldString(o, "status.primaryEndpoint")
		if endpoint == "" {
			endpoint = "not yet known"
		}
		r.Details = append(r.Details, detail{"Endpoint", endpoint}, detail{"Credentials Secret", secret})
	case mooringv1.KindBackup:
		last := func(path string) string {
			if t, ok := timeField(o, path); ok {
				return t.UTC().Format(time.RFC3339) + " (" + age(now.Sub(t)) + " ago)"
			}
			return "never"
		}
		r.Details = append(r.Details, detail{"Last success", last("status.lastSuccessfulTime")},
			detail{"Last failure", last("status.lastFailedTime")}, detail{"Next scheduled run", nextRun(o, now)})
	}
	return r
}

// nextRun is when the schedule next starts a backup, or why it will not.
func nextRun(o map[string]any, now time.Time) string {
	if s, _, _ := unstructured.NestedBool(o, "spec", "suspend"); s {
		return "suspended"
	}
	spec := fieldString(o, "spec.schedule")
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return "invalid schedule"
	}
	next := sched.Next(now)
	return next.UTC().Format(time.RFC3339) + " (in " + age(next.Sub(now)) + ")"
}

// version hashes what the live part depends on: every object's resourceVersion and
// the events shown, so an unchanged namespace answers 304 to a poll.
func version(parts []string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return `"` + hex.EncodeToString(h[:12]) + `"`
}
