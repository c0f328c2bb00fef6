package objecttree

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// State is how a line of a status tree is judged; it picks the colour on a terminal.
type State string

// States, from good to bad. Neutral is for objects that have no health of their own
// (a ConfigMap, a Secret).
const (
	StateNeutral State = ""
	StateOK      State = "ok"
	StateWarning State = "warning"
	StateError   State = "error"
)

// Node is one object of a status tree: a Mooring object or something it owns. It is what
// -o json|yaml prints, and what the text renderer draws.
type Node struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Namespace is set on the roots only; children live in their parent's namespace.
	Namespace string `json:"namespace,omitempty"`
	// Ready is "ready/desired" where the object has replicas or containers, e.g. "2/3".
	Ready string `json:"ready,omitempty"`
	// Status is the phase, or the reason when there is no phase.
	Status  string    `json:"status,omitempty"`
	State   State     `json:"state,omitempty"`
	Created time.Time `json:"created,omitzero"`
	// Details are short facts: "node mooring-node-1", "role primary", "next run in 5h".
	Details    []Detail    `json:"details,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
	Children   []*Node     `json:"children,omitempty"`
}

// Detail is one fact about an object: a value, or a time shown relative to now.
type Detail struct {
	Name  string     `json:"name"`
	Value string     `json:"value,omitempty"`
	Time  *time.Time `json:"time,omitempty"`
}

// Condition is a status condition of an object. Abnormal ones (a Ready that is not True,
// a Paused that is) are printed with their message; --show-conditions prints all.
type Condition struct {
	Type     string    `json:"type"`
	Status   string    `json:"status"`
	Reason   string    `json:"reason,omitempty"`
	Message  string    `json:"message,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	Abnormal bool      `json:"abnormal,omitempty"`
}

// Most conditions are good when True. These are worth a line when True instead: Paused
// and failures, Progressing, which is True while a rollout is under way and False once it
// is done, and a DatabaseCluster's MigrationNeeded, True while it runs a Bitnami-era
// StatefulSet Mooring must not change.
var abnormalWhenTrue = map[string]bool{
	mooringv1.ConditionPaused: true, mooringv1.ConditionProgressing: true, v1beta1.ConditionMigrationNeeded: true,
	// A Deployment's and a Job's.
	string(appsv1.DeploymentReplicaFailure): true, string(batchv1.JobFailed): true,
}

// fromMetaConditions converts the conditions of a Mooring object.
func fromMetaConditions(conds []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(conds))
	for _, c := range conds {
		abnormal := c.Status != metav1.ConditionTrue
		if abnormalWhenTrue[c.Type] {
			abnormal = c.Status == metav1.ConditionTrue
		}
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Since: c.LastTransitionTime.Time, Abnormal: abnormal})
	}
	return out
}

// value is a Detail with a plain value.
func value(name, v string) Detail { return Detail{Name: name, Value: v} }

// at is a Detail with a time; nil when t is nil, so callers can pass optional times.
func at(name string, t *metav1.Time) *Detail {
	if t == nil || t.IsZero() {
		return nil
	}
	tt := t.Time
	return &Detail{Name: name, Time: &tt}
}

// addDetails appends the details that are not nil.
func (n *Node) addDetails(ds ...*Detail) {
	for _, d := range ds {
		if d != nil {
			n.Details = append(n.Details, *d)
		}
	}
}

// kindOrder sorts children: the workload first, then what serves it, then the rest.
var kindOrder = map[string]int{
	"Deployment": 0, "StatefulSet": 0, "ReplicaSet": 1, "Pod": 2, "PersistentVolumeClaim": 3,
	"Service": 4, "Ingress": 5, "HTTPRoute": 6, "ConfigMap": 7, "Secret": 8, "PodDisruptionBudget": 9, "NetworkPolicy": 9,
	"HorizontalPodAutoscaler": 10, "Backup": 11, "CronJob": 12, "Job": 13,
}

// sortChildren orders children by kind, then by name; Jobs newest first.
func sortChildren(ns []*Node) {
	sort.SliceStable(ns, func(i, j int) bool {
		a, b := ns[i], ns[j]
		if kindOrder[a.Kind] != kindOrder[b.Kind] {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		if a.Kind == "Job" && !a.Created.Equal(b.Created) {
			return a.Created.After(b.Created)
		}
		return a.Name < b.Name
	})
}

// Walk calls fn for n and every node below it, parents first.
func (n *Node) Walk(fn func(*Node)) {
	fn(n)
	for _, c := range n.Children {
		c.Walk(fn)
	}
}
