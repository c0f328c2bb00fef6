package ui

import (
	"errors"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mooringhq/mooring/internal/objecttree"
)

// logLines is how many of a pod's last log lines an object page shows; logBytes caps
// them, so one huge line cannot make the page huge.
const (
	logLines       = 50
	logBytes int64 = 64 << 10
)

// treeLine is one line of an object's children: a node of its status tree, indented by
// Depth (1 for what the object owns directly).
type treeLine struct {
	Depth                     int
	Kind, Name, Ready, Status string
	// State is ok, warning, error or "" (no health of its own), the plugin's.
	State   string
	Details string
}

// podLine is one pod of an object: phase (or why a container waits), ready containers
// and restarts.
type podLine struct {
	Name, Status, Ready, Restarts, Node, State string
	// Shown is the pod whose log the page shows.
	Shown bool
}

// logView is the last lines of one pod's log, or why they are not shown.
type logView struct {
	Pod   string
	Lines []string
	// NotAllowed is set when RBAC refused pods/log to the caller.
	NotAllowed bool
	// NoNodeLogs is set when the pod's node serves no logs (a simulated node, a node
	// whose kubelet is gone): Error then says so, with the API server's words.
	NoNodeLogs bool
	// Error is any other reason there are no lines.
	Error string
}

// objectView is an object page: the namespace page's row of the object, its spec and
// status, events, children, pods, a pod's log and the object as YAML.
type objectView struct {
	Namespace string
	Kind      *kindSpec
	Row       row
	// Health sums up the conditions: unhealthy if any is, else pending if any is.
	Health       string
	Spec, Status string
	Events       []event
	EventsError  string
	Children     []treeLine
	TreeError    string
	// Hidden are the kinds the caller may not list: their objects are not among Children.
	Hidden []string
	Pods   []podLine
	Log    *logView
	YAML   string
	// Controls the caller's RBAC allows, as on the namespace page.
	CanUpdate, CanPatch, CanDelete bool
}

// rowHealth is the worst health of the conditions; an object without conditions has
// not been looked at by the operator yet.
func rowHealth(conds []condition) string {
	if len(conds) == 0 {
		return pending
	}
	worst := healthy
	for _, c := range conds {
		switch c.Health {
		case unhealthy:
			return unhealthy
		case pending:
			worst = pending
		}
	}
	return worst
}

// allEvents is every event of one object, newest first.
func allEvents(events []corev1.Event, now time.Time) []event {
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b corev1.Event) int { return eventTime(&b).Compare(eventTime(&a)) })
	out := make([]event, 0, len(sorted))
	for i := range sorted {
		e := &sorted[i]
		out = append(out, event{Type: e.Type, Reason: e.Reason, Message: e.Message, Age: age(now.Sub(eventTime(e))), Count: e.Count})
	}
	return out
}

// toYAML is v as YAML, or a note saying why it cannot be shown.
func toYAML(v any) string {
	if v == nil {
		return ""
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return "# cannot show: " + err.Error()
	}
	return string(b)
}

// treeLines flattens the children of root, depth first, as the plugin prints them.
func treeLines(root *objecttree.Node) []treeLine {
	var out []treeLine
	var walk func(n *objecttree.Node, depth int)
	walk = func(n *objecttree.Node, depth int) {
		for _, c := range n.Children {
			var details []string
			for _, d := range c.Details {
				if d.Time != nil {
					details = append(details, d.Name+" "+d.Time.UTC().Format(time.RFC3339))
				} else {
					details = append(details, strings.TrimSpace(d.Name+" "+d.Value))
				}
			}
			out = append(out, treeLine{Depth: depth, Kind: c.Kind, Name: c.Name, Ready: c.Ready, Status: c.Status,
				State: string(c.State), Details: strings.Join(details, ", ")})
			walk(c, depth+1)
		}
	}
	if root != nil {
		walk(root, 1)
	}
	return out
}

// podLines are the pods anywhere below root.
func podLines(root *objecttree.Node) []podLine {
	var out []podLine
	if root == nil {
		return out
	}
	root.Walk(func(n *objecttree.Node) {
		if n.Kind != "Pod" {
			return
		}
		p := podLine{Name: n.Name, Status: n.Status, Ready: n.Ready, State: string(n.State), Restarts: "0"}
		for _, d := range n.Details {
			switch d.Name {
			case "restarts":
				p.Restarts = d.Value
			case "node":
				p.Node = d.Value
			}
		}
		out = append(out, p)
	})
	return out
}

// pickPod is the pod whose log is shown: the one asked for when it is the object's, else
// the first; "" when the object has no pods or asked names none of them.
func pickPod(pods []podLine, asked string) string {
	if asked != "" {
		for _, p := range pods {
			if p.Name == asked {
				return asked
			}
		}
		return ""
	}
	if len(pods) > 0 {
		return pods[0].Name
	}
	return ""
}

// makeLog is what the page shows of a log read: its last lines, "not allowed" for a
// 403, that the pod's node serves no logs, or the API server's reason otherwise.
func makeLog(pod, text string, err error) *logView {
	l := &logView{Pod: pod}
	var st apierrors.APIStatus
	switch {
	case apierrors.IsForbidden(err):
		l.NotAllowed = true
	case errors.As(err, &st) && nodeServesNoLogs(st.Status()):
		l.NoNodeLogs = true
		l.Error = "This pod's node serves no logs (the API server could not read them from it: " + st.Status().Message + ")."
	case err != nil:
		// Only the API server's own message is shown; anything else may carry the
		// portal's internals.
		l.Error = "The log cannot be read."
		var st apierrors.APIStatus
		if errors.As(err, &st) && st.Status().Message != "" {
			l.Error = "The log cannot be read: " + st.Status().Message
		}
	default:
		text = strings.TrimRight(text, "\n")
		if text != "" {
			l.Lines = strings.Split(text, "\n")
		}
		if len(l.Lines) > logLines {
			l.Lines = l.Lines[len(l.Lines)-logLines:]
		}
	}
	return l
}

// nodeServesNoLogs tells from the API server's answer to a log read that the pod's node
// did not serve the log. The API server reads a pod's log from the kubelet of the pod's
// node (a pod on no node has an empty log, read without error): when it cannot reach
// one, as for kwok's simulated nodes, which run no kubelet, it fails the request itself
// with a server error (500, "dial tcp ...: connection refused", or 502 to 504), or with
// 404 when the pod's Node object is gone. The API server's own refusals of the request
// (403, 400 for a container the pod lacks, 404 for the pod) are not about the node.
func nodeServesNoLogs(st metav1.Status) bool {
	switch {
	case st.Code >= 500 && st.Code <= 504:
		return true
	case st.Code == 404 && st.Details != nil && st.Details.Kind == "nodes":
		return true
	}
	return false
}

// objectInput is what an object page is built from, each read as the caller.
type objectInput struct {
	Namespace string
	Kind      *kindSpec
	Object    *unstructured.Unstructured
	Events    []corev1.Event
	EventsErr error
	Tree      *objecttree.Node
	Hidden    []string
	TreeErr   error
	// Pod is the pod whose log was read (""), with its text or error.
	Pod    string
	LogErr error
	Log    string
}

// makeObjectView builds an object page from what was read; describe turns read errors
// into sentences.
func makeObjectView(in objectInput, now time.Time, describeErr func(error) string) objectView {
	o := in.Object.Object
	v := objectView{Namespace: in.Namespace, Kind: in.Kind, Row: makeRow(in.Kind, in.Object, now),
		Spec: toYAML(o["spec"]), YAML: toYAML(o), Hidden: in.Hidden}
	v.Health = v.Row.Health
	if st, ok := o["status"].(map[string]any); ok {
		rest := map[string]any{}
		for k, val := range st {
			if k != "conditions" { // shown above, with their health
				rest[k] = val
			}
		}
		if len(rest) > 0 {
			v.Status = toYAML(rest)
		}
	}
	if in.EventsErr != nil {
		v.EventsError = describeErr(in.EventsErr)
	} else {
		v.Events = allEvents(in.Events, now)
	}
	if in.TreeErr != nil {
		v.TreeError = describeErr(in.TreeErr)
	}
	v.Children = treeLines(in.Tree)
	v.Pods = podLines(in.Tree)
	if in.Pod != "" {
		for i := range v.Pods {
			v.Pods[i].Shown = v.Pods[i].Name == in.Pod
		}
		v.Log = makeLog(in.Pod, in.Log, in.LogErr)
	}
	return v
}
