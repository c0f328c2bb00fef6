package ui

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/objecttree"
)

// webTree is the plugin's tree of App web: Deployment → ReplicaSet → two Pods, and a
// Service.
func webTree() *objecttree.Node {
	pod := func(name, status, ready, restarts string, state objecttree.State) *objecttree.Node {
		return &objecttree.Node{Kind: "Pod", Name: name, Status: status, Ready: ready, State: state,
			Details: []objecttree.Detail{{Name: "node", Value: "kwok-node-0"}, {Name: "restarts", Value: restarts}}}
	}
	return &objecttree.Node{Kind: "App", Name: "web", Children: []*objecttree.Node{
		{Kind: "Deployment", Name: "web", Ready: "1/2", Status: "NotAvailable", State: objecttree.StateWarning, Children: []*objecttree.Node{
			{Kind: "ReplicaSet", Name: "web-5d8f", Ready: "1/2", Status: "NotReady", State: objecttree.StateWarning,
				Details: []objecttree.Detail{{Name: "revision", Value: "1"}}, Children: []*objecttree.Node{
					pod("web-5d8f-a", "Running", "1/1", "0", objecttree.StateOK),
					pod("web-5d8f-b", "CrashLoopBackOff", "0/1", "7", objecttree.StateWarning),
				}},
		}},
		{Kind: "Service", Name: "web", State: objecttree.StateNeutral},
	}}
}

func TestTreeLinesAndPodLines(t *testing.T) {
	lines := treeLines(webTree())
	var got []string
	for _, l := range lines {
		got = append(got, strings.Repeat(">", l.Depth)+l.Kind+"/"+l.Name+" "+l.Ready+" "+l.Status+" "+l.Details)
	}
	want := []string{
		">Deployment/web 1/2 NotAvailable ", ">>ReplicaSet/web-5d8f 1/2 NotReady revision 1",
		">>>Pod/web-5d8f-a 1/1 Running node kwok-node-0, restarts 0", ">>>Pod/web-5d8f-b 0/1 CrashLoopBackOff node kwok-node-0, restarts 7",
		">Service/web   ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("tree lines:\n got %q\nwant %q", got, want)
	}
	pods := podLines(webTree())
	if len(pods) != 2 || pods[1] != (podLine{Name: "web-5d8f-b", Status: "CrashLoopBackOff", Ready: "0/1", Restarts: "7", Node: "kwok-node-0", State: "warning"}) {
		t.Errorf("pods: %+v", pods)
	}
	if treeLines(nil) != nil || len(podLines(nil)) != 0 {
		t.Error("no tree should give no lines")
	}
}

func TestPickPod(t *testing.T) {
	pods := podLines(webTree())
	tests := map[string]struct{ asked, want string }{
		"the first by default":          {"", "web-5d8f-a"},
		"the one asked for":             {"web-5d8f-b", "web-5d8f-b"},
		"not a pod of this object":      {"other-pod", ""},
		"nothing when there is no pod?": {"", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := pods
			if strings.HasPrefix(name, "nothing") {
				in = nil
			}
			if got := pickPod(in, tc.asked); got != tc.want {
				t.Errorf("pickPod(%q) = %q, want %q", tc.asked, got, tc.want)
			}
		})
	}
}

func TestMakeLog(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/log"}, "web-1", errors.New("no"))
	long := strings.Repeat("line\n", logLines+10)
	tests := map[string]struct {
		text       string
		err        error
		lines      int
		notAllowed bool
		errorIn    string
	}{
		"lines":              {text: "a\nb\n", lines: 2},
		"the last ones only": {text: long, lines: logLines},
		"empty":              {text: "", lines: 0},
		"forbidden":          {err: forbidden, notAllowed: true},
		"other API error":    {err: apierrors.NewBadRequest("container web is waiting to start"), errorIn: "container web is waiting to start"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := makeLog("web-1", tc.text, tc.err)
			if len(l.Lines) != tc.lines || l.NotAllowed != tc.notAllowed || !strings.Contains(l.Error, tc.errorIn) {
				t.Errorf("got %d lines, notAllowed %v, error %q; want %d, %v, containing %q", len(l.Lines), l.NotAllowed, l.Error, tc.lines, tc.notAllowed, tc.errorIn)
			}
			if tc.notAllowed && len(l.Lines) != 0 {
				t.Error("a forbidden log shows lines")
			}
		})
	}
}

func TestRowHealth(t *testing.T) {
	c := func(h string) condition { return condition{Health: h} }
	tests := map[string]struct {
		in   []condition
		want string
	}{
		"none yet":          {nil, pending},
		"all healthy":       {[]condition{c(healthy), c(healthy)}, healthy},
		"one pending":       {[]condition{c(healthy), c(pending)}, pending},
		"unhealthy wins":    {[]condition{c(pending), c(unhealthy), c(healthy)}, unhealthy},
		"unhealthy at last": {[]condition{c(healthy), c(unhealthy)}, unhealthy},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := rowHealth(tc.in); got != tc.want {
				t.Errorf("rowHealth = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMakeObjectView(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "mooring.dev/v1", "kind": "App",
		"metadata": map[string]any{"name": "web", "namespace": "team-a"},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(2)},
		"status": map[string]any{"phase": "Running", "availableReplicas": int64(2), "conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Available"},
			map[string]any{"type": "Progressing", "status": "False", "reason": "RolloutComplete"},
		}},
	}}
	events := []corev1.Event{
		{Type: "Normal", Reason: "Old", Message: "first", LastTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		{Type: "Warning", Reason: "New", Message: "second", Count: 3, LastTimestamp: metav1.NewTime(now.Add(-time.Minute))},
	}
	v := makeObjectView(objectInput{Namespace: "team-a", Kind: kindSpecs[mooringv1.ResourceApps], Object: obj, Events: events,
		Tree: webTree(), Hidden: []string{"Secrets"}, Pod: "web-5d8f-b", Log: "starting\ncrashed\n"}, now, func(err error) string { return err.Error() })

	if v.Health != healthy {
		t.Errorf("a Ready App whose rollout is complete reads %q, want healthy", v.Health)
	}
	for _, c := range v.Row.Conditions {
		if c.Health != healthy {
			t.Errorf("condition %s=%s reads %q, want healthy", c.Type, c.Status, c.Health)
		}
	}
	if len(v.Events) != 2 || v.Events[0].Reason != "New" || v.Events[0].Age != "60s" || v.Events[1].Age != "60m" {
		t.Errorf("events, newest first: %+v", v.Events)
	}
	if !strings.Contains(v.Spec, "image: nginx:1.27") || strings.Contains(v.Status, "conditions") || !strings.Contains(v.Status, "availableReplicas: 2") {
		t.Errorf("spec %q / status %q: want the spec, and the status without its conditions (shown above)", v.Spec, v.Status)
	}
	if !strings.Contains(v.YAML, "kind: App") || !strings.Contains(v.YAML, "reason: RolloutComplete") {
		t.Errorf("YAML: %s", v.YAML)
	}
	if len(v.Children) != 5 || len(v.Pods) != 2 || !v.Pods[1].Shown || v.Pods[0].Shown {
		t.Errorf("children %d, pods %+v: want 5 lines and the second pod's log shown", len(v.Children), v.Pods)
	}
	if v.Log == nil || !slices.Equal(v.Log.Lines, []string{"starting", "crashed"}) {
		t.Errorf("log: %+v", v.Log)
	}
	if !slices.Equal(v.Hidden, []string{"Secrets"}) {
		t.Errorf("hidden: %v", v.Hidden)
	}

	failed := makeObjectView(objectInput{Namespace: "team-a", Kind: kindSpecs[mooringv1.ResourceApps], Object: obj,
		EventsErr: errors.New("events: no"), TreeErr: errors.New("tree: no")}, now, func(err error) string { return "said: " + err.Error() })
	if failed.EventsError != "said: events: no" || failed.TreeError != "said: tree: no" || failed.Log != nil || len(failed.Pods) != 0 {
		t.Errorf("read errors: %+v", failed)
	}
}

// seedObjectPage gives App web of team-a its tree and logs.
func seedObjectPage(h *harness) {
	seedNamespace(h)
	h.obj.trees["team-a/App/web"] = webTree()
	h.obj.logs["team-a/web-5d8f-a"] = "listening on :80\nGET / 200\n"
	h.obj.logs["team-a/web-5d8f-b"] = "panic: " + hostile + "\n"
}

func TestObjectPageShowsEverything(t *testing.T) {
	h := newHarness(t)
	seedObjectPage(h)
	a := h.as("dev").get(Prefix + "/ns/team-a/apps/web")
	wantStatus(t, a, http.StatusOK, "object page")
	wantIn(t, a.body, "object page",
		`data-kind="App" data-name="web" data-health="unhealthy"><span class="health unhealthy">unhealthy</span>`,
		"<strong>Ready</strong> is False (Rollout)", `<li class="condition pending"><strong>Progressing</strong>`,
		"Failed: pull &lt;script&gt;", "Created: Created Deployment web",
		`<span class="kind">Deployment</span> <strong>web</strong>`, `<span class="kind">Service</span> <strong>web</strong>`,
		`<tr class="pod state-warning" data-name="web-5d8f-b">`, `<td data-label="Restarts">7</td>`, `<td data-label="Status">CrashLoopBackOff</td>`,
		"Log of web-5d8f-a", "listening on :80\nGET / 200\n",
		"image: nginx:1.27", "The object as YAML", "Pause web", "Delete web", `href="/ui/ns/team-a/apps/web/edit"`)
	wantNotIn(t, a.body, "object page", hostile, "<script>alert")

	b := h.as("dev").get(Prefix + "/ns/team-a/apps/web?pod=web-5d8f-b")
	wantIn(t, b.body, "the second pod's log", "Log of web-5d8f-b", "panic: &lt;script&gt;")
	wantNotIn(t, b.body, "the second pod's log", "<script>alert", "listening on :80")

	// ?pod= names a pod that is not this object's: no log is read.
	h.obj.mu.Lock()
	h.obj.read = nil
	h.obj.mu.Unlock()
	c := h.as("dev").get(Prefix + "/ns/team-a/apps/web?pod=someone-elses")
	wantStatus(t, c, http.StatusOK, "a stranger pod")
	wantNotIn(t, c.body, "a stranger pod", "Log of", "someone-elses")
	if len(h.obj.read) != 0 {
		t.Errorf("read the logs of %v for a pod that is not the object's", h.obj.read)
	}

	// An auditor reads, with no controls.
	d := h.as("auditor").get(Prefix + "/ns/team-a/apps/web")
	wantStatus(t, d, http.StatusOK, "auditor's object page")
	wantNotIn(t, d.body, "auditor's object page", "Pause web", "Delete web", "/edit")
}

func TestObjectPageLogNotAllowed(t *testing.T) {
	h := newHarness(t)
	seedObjectPage(h)
	h.obj.noLogs["dev"] = true
	a := h.as("dev").get(Prefix + "/ns/team-a/apps/web")
	wantStatus(t, a, http.StatusOK, "object page without pods/log")
	wantIn(t, a.body, "object page without pods/log", `id="log-not-allowed"`, "not allowed", "Log of web-5d8f-a",
		`<tr class="pod state-ok" data-name="web-5d8f-a">`)
	wantNotIn(t, a.body, "object page without pods/log", "listening on :80")
}

// TestObjectPageLogOfANodeWithoutLogs: the API server's error for a log it could not
// read from the pod's node (here as it answers for a simulated node) is said in words.
func TestObjectPageLogOfANodeWithoutLogs(t *testing.T) {
	h := newHarness(t)
	seedObjectPage(h)
	h.obj.logErrs = map[string]error{"team-a/web-5d8f-a": &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
		Message: `Get "https://10.0.0.7:10250/containerLogs/team-a/web-5d8f-a/web": dial tcp 10.0.0.7:10250: connect: connection refused`}}}
	a := h.as("dev").get(Prefix + "/ns/team-a/apps/web")
	wantStatus(t, a, http.StatusOK, "object page of a pod on a node without logs")
	wantIn(t, a.body, "object page of a pod on a node without logs", `id="log-no-node-logs"`, "This pod&#39;s node serves no logs", "connection refused")
}

func TestObjectPageOfAMissingObjectOrKind(t *testing.T) {
	h := newHarness(t)
	seedObjectPage(h)
	b := h.as("dev")
	wantStatus(t, b.get(Prefix+"/ns/team-a/apps/nothere"), http.StatusNotFound, "a missing object")
	wantStatus(t, b.get(Prefix+"/ns/team-a/widgets/web"), http.StatusNotFound, "an unknown kind")
	wantStatus(t, b.get(Prefix+"/ns/team-a/apps/Not_A_Name"), http.StatusBadRequest, "a bad name")
}

// TestNamespacePageOf200Objects: a namespace page of 200 Apps is one list per kind and
// nothing per object (no events, trees or logs), with one line per object linking to
// its page.
func TestNamespacePageOf200Objects(t *testing.T) {
	h := newHarness(t)
	for i := range 200 {
		h.res.put("team-a", "apps", map[string]any{
			"metadata": map[string]any{"name": fmt.Sprintf("app-%03d", i)},
			"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(1)},
			"status": map[string]any{"phase": "Running", "conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "AllReplicasAvailable"},
				map[string]any{"type": "Progressing", "status": "False", "reason": "RolloutComplete"}}},
		})
	}
	b := h.as("dev")
	start := time.Now()
	a := b.get(Prefix + "/ns/team-a")
	took := time.Since(start)
	wantStatus(t, a, http.StatusOK, "a namespace of 200 Apps")
	if n := strings.Count(a.body, `<tr class="object"`); n != 200 {
		t.Errorf("want 200 lines, got %d", n)
	}
	if n := strings.Count(a.body, `data-health="healthy"`); n != 200 {
		t.Errorf("want 200 healthy Apps, got %d", n)
	}
	wantIn(t, a.body, "the last App's line", `<a href="/ui/ns/team-a/apps/app-199">app-199</a>`)
	h.res.mu.Lock()
	lists := h.res.lists
	h.res.mu.Unlock()
	if lists != len(kindOrder) {
		t.Errorf("want one list per kind (%d), got %d", len(kindOrder), lists)
	}
	if h.obj.calls != 0 {
		t.Errorf("the namespace page read %d events, trees or logs; want none (they are the object page's)", h.obj.calls)
	}
	t.Logf("200 Apps: %d bytes, rendered in %v", len(a.body), took)
}

// TestNamespacePageListsOnlyConditionsThatAreNotHealthy: a healthy object's line is its
// health alone; its conditions are on its page.
func TestNamespacePageListsOnlyConditionsThatAreNotHealthy(t *testing.T) {
	h := newHarness(t)
	seedNamespace(h)
	h.res.put("team-a", "apps", map[string]any{
		"metadata": map[string]any{"name": "fine"},
		"spec":     map[string]any{"image": "nginx:1.27"},
		"status": map[string]any{"phase": "Running", "conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "AllReplicasAvailable", "message": "FINE-READY"}}},
	})
	a := h.as("dev").get(Prefix + "/ns/team-a")
	wantIn(t, a.body, "namespace page", `data-name="fine" data-phase="Running" data-health="healthy"`, "<strong>Ready</strong> is False (Rollout)")
	wantNotIn(t, a.body, "namespace page", "FINE-READY")
	wantIn(t, h.as("dev").get(Prefix+"/ns/team-a/apps/fine").body, "fine's page", "FINE-READY")
}

func TestMakeLogHidesErrorsThatAreNotTheAPIServers(t *testing.T) {
	l := makeLog("web-1", "", errors.New("dial tcp 10.0.0.7:6443: secret internals"))
	if l.Error != "The log cannot be read." {
		t.Errorf("a transport error reads %q, want the plain sentence", l.Error)
	}
}
