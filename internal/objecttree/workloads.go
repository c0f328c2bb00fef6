package objecttree

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mooringhq/mooring/internal/jobstatus"
)

// The nodes of the built-in kinds Mooring's objects own. Each takes the object and
// returns its line; the kind trees (kinds.go) put them together.

// ratio formats "ready/desired".
func ratio(ready, desired int32) string { return fmt.Sprintf("%d/%d", ready, desired) }

// deploymentNode is a Deployment with its ReplicaSets and their Pods.
func (s *Snapshot) deploymentNode(d *appsv1.Deployment) *Node {
	desired := ptr.Deref(d.Spec.Replicas, 1)
	n := &Node{Kind: "Deployment", Name: d.Name, Created: d.CreationTimestamp.Time, Ready: ratio(d.Status.AvailableReplicas, desired)}
	switch {
	case d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < desired:
		n.Status, n.State = "Updating", StateWarning
	case d.Status.AvailableReplicas < desired:
		n.Status, n.State = "NotAvailable", StateWarning
	default:
		n.Status, n.State = "Available", StateOK
	}
	for _, c := range d.Status.Conditions {
		// Available and Progressing are good when True; ReplicaFailure when False.
		abnormal := c.Status != corev1.ConditionTrue
		if c.Type == appsv1.DeploymentReplicaFailure {
			abnormal = c.Status == corev1.ConditionTrue
		}
		n.Conditions = append(n.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Since: c.LastTransitionTime.Time, Abnormal: abnormal})
	}
	for _, rs := range owned[appsv1.ReplicaSet](s.ReplicaSets, d) {
		// Old ReplicaSets scaled to zero are history, not state.
		if ptr.Deref(rs.Spec.Replicas, 0) == 0 && rs.Status.Replicas == 0 {
			continue
		}
		n.Children = append(n.Children, s.replicaSetNode(rs))
	}
	return n
}

func (s *Snapshot) replicaSetNode(rs *appsv1.ReplicaSet) *Node {
	desired := ptr.Deref(rs.Spec.Replicas, 0)
	n := &Node{Kind: "ReplicaSet", Name: rs.Name, Created: rs.CreationTimestamp.Time, Ready: ratio(rs.Status.ReadyReplicas, desired)}
	if rs.Status.ReadyReplicas >= desired {
		n.Status, n.State = "Ready", StateOK
	} else {
		n.Status, n.State = "NotReady", StateWarning
	}
	if rev := rs.Annotations["deployment.kubernetes.io/revision"]; rev != "" {
		n.Details = append(n.Details, value("revision", rev))
	}
	for _, p := range owned[corev1.Pod](s.Pods, rs) {
		n.Children = append(n.Children, podNode(p, ""))
	}
	return n
}

// podNode is a Pod: ready containers, phase (or why a container waits), node, restarts,
// and the database role when there is one.
func podNode(p *corev1.Pod, role string) *Node {
	n := &Node{Kind: "Pod", Name: p.Name, Created: p.CreationTimestamp.Time, Status: string(p.Status.Phase)}
	var ready, restarts int32
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
		restarts += cs.RestartCount
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			n.Status = cs.State.Waiting.Reason
		}
	}
	n.Ready = ratio(ready, int32(len(p.Spec.Containers)))
	podReady := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			podReady = c.Status == corev1.ConditionTrue
			n.Conditions = append(n.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message,
				Since: c.LastTransitionTime.Time, Abnormal: !podReady})
		}
	}
	switch {
	case p.DeletionTimestamp != nil:
		n.Status, n.State = "Terminating", StateWarning
	case p.Status.Phase == corev1.PodFailed:
		n.State = StateError
	case p.Status.Phase == corev1.PodSucceeded, p.Status.Phase == corev1.PodRunning && podReady:
		n.State = StateOK
	default:
		n.State = StateWarning
	}
	if role != "" {
		n.Details = append(n.Details, value("role", role))
	}
	if p.Spec.NodeName != "" {
		n.Details = append(n.Details, value("node", p.Spec.NodeName))
	}
	n.Details = append(n.Details, value("restarts", fmt.Sprint(restarts)))
	return n
}

// statefulSetNode is a StatefulSet with its Pods (role by pod index: 0 is the primary)
// and the volumes of its claim templates.
func (s *Snapshot) statefulSetNode(sts *appsv1.StatefulSet) *Node {
	desired := ptr.Deref(sts.Spec.Replicas, 1)
	n := &Node{Kind: "StatefulSet", Name: sts.Name, Created: sts.CreationTimestamp.Time, Ready: ratio(sts.Status.ReadyReplicas, desired)}
	switch {
	case sts.Status.ObservedGeneration < sts.Generation || sts.Status.UpdatedReplicas < desired:
		n.Status, n.State = "Updating", StateWarning
	case sts.Status.ReadyReplicas < desired:
		n.Status, n.State = "NotReady", StateWarning
	default:
		n.Status, n.State = "Ready", StateOK
	}
	for _, p := range owned[corev1.Pod](s.Pods, sts) {
		role := "replica"
		if p.Labels[appsv1.PodIndexLabel] == "0" {
			role = "primary"
		}
		n.Children = append(n.Children, podNode(p, role))
	}
	for i := range s.Claims {
		c := &s.Claims[i]
		if c.Namespace == sts.Namespace && claimOf(c.Name, sts) {
			n.Children = append(n.Children, claimNode(c))
		}
	}
	return n
}

// claimOf reports whether a claim name is <template>-<statefulset>-<ordinal>, the name
// the StatefulSet controller gives the volumes of its claim templates.
func claimOf(name string, sts *appsv1.StatefulSet) bool {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		prefix := t.Name + "-" + sts.Name + "-"
		if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}

// claimNode is a PersistentVolumeClaim: bound or not, and its size.
func claimNode(c *corev1.PersistentVolumeClaim) *Node {
	n := &Node{Kind: "PersistentVolumeClaim", Name: c.Name, Created: c.CreationTimestamp.Time, Status: string(c.Status.Phase)}
	switch c.Status.Phase {
	case corev1.ClaimBound:
		n.State = StateOK
	case corev1.ClaimLost:
		n.State = StateError
	default:
		n.State = StateWarning
	}
	size := c.Spec.Resources.Requests[corev1.ResourceStorage]
	if capacity, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		size = capacity
	}
	n.Details = append(n.Details, value("size", size.String()))
	if sc := ptr.Deref(c.Spec.StorageClassName, ""); sc != "" {
		n.Details = append(n.Details, value("class", sc))
	}
	return n
}

// serviceNode is a Service: its type and ports (not its cluster IP, which says nothing
// about health).
func serviceNode(svc *corev1.Service) *Node {
	n := &Node{Kind: "Service", Name: svc.Name, Created: svc.CreationTimestamp.Time, Status: string(svc.Spec.Type)}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		n.Status = "Headless"
	}
	ports := make([]string, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
	}
	if len(ports) > 0 {
		n.Details = append(n.Details, value("ports", strings.Join(ports, ",")))
	}
	return n
}

func configMapNode(cm *corev1.ConfigMap) *Node {
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := &Node{Kind: "ConfigMap", Name: cm.Name, Created: cm.CreationTimestamp.Time}
	if len(keys) > 0 {
		n.Details = append(n.Details, value("keys", strings.Join(keys, ",")))
	}
	return n
}

func disruptionBudgetNode(pdb *policyv1.PodDisruptionBudget) *Node {
	n := &Node{Kind: "PodDisruptionBudget", Name: pdb.Name, Created: pdb.CreationTimestamp.Time,
		Ready: ratio(pdb.Status.CurrentHealthy, pdb.Status.ExpectedPods)}
	if pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy {
		n.Status, n.State = "Healthy", StateOK
	} else {
		n.Status, n.State = "Degraded", StateWarning
	}
	n.Details = append(n.Details, value("min healthy", fmt.Sprint(pdb.Status.DesiredHealthy)),
		value("allowed disruptions", fmt.Sprint(pdb.Status.DisruptionsAllowed)))
	return n
}

// networkPolicyNode is a NetworkPolicy: how many sources its first rule admits.
func networkPolicyNode(np *networkingv1.NetworkPolicy) *Node {
	n := &Node{Kind: "NetworkPolicy", Name: np.Name, Created: np.CreationTimestamp.Time}
	if len(np.Spec.Ingress) > 0 {
		n.Details = append(n.Details, value("sources", fmt.Sprint(len(np.Spec.Ingress[0].From))))
	}
	return n
}

// jobNode is a dump Job: how it ended, or that it still runs.
func jobNode(j *batchv1.Job) *Node {
	n := &Node{Kind: "Job", Name: j.Name, Created: j.CreationTimestamp.Time,
		Ready: ratio(j.Status.Succeeded, ptr.Deref(j.Spec.Completions, 1)), Status: "Running", State: StateNeutral}
	switch st := jobstatus.Of(j); st.Phase {
	case jobstatus.Pending:
		n.Status = "Pending"
	case jobstatus.Succeeded:
		n.Status, n.State = "Complete", StateOK
	case jobstatus.Failed:
		n.Status, n.State = "Failed", StateError
		n.Conditions = append(n.Conditions, Condition{Type: string(batchv1.JobFailed), Status: string(corev1.ConditionTrue),
			Reason: st.Reason, Message: st.Message, Since: st.At.Time, Abnormal: true})
	}
	if j.Status.StartTime != nil && j.Status.CompletionTime != nil {
		n.Details = append(n.Details, value("duration", j.Status.CompletionTime.Sub(j.Status.StartTime.Time).Round(time.Second).String()))
	}
	return n
}

// latestJobs keeps the newest n Jobs: a tree shows the last runs, not all history.
func latestJobs(jobs []*batchv1.Job, n int) []*batchv1.Job {
	sort.SliceStable(jobs, func(i, k int) bool {
		return jobs[k].CreationTimestamp.Before(&jobs[i].CreationTimestamp)
	})
	if len(jobs) > n {
		jobs = jobs[:n]
	}
	return jobs
}

// autoscalerNode is a HorizontalPodAutoscaler: current/desired replicas, its bounds, and
// each resource target with the last reading ("cpu 35%/70%"). It is Active while it can
// scale; a False AbleToScale or ScalingActive (no metrics, say) is shown with its message.
func autoscalerNode(hpa *autoscalingv2.HorizontalPodAutoscaler) *Node {
	n := &Node{Kind: "HorizontalPodAutoscaler", Name: hpa.Name, Created: hpa.CreationTimestamp.Time,
		Ready: ratio(hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas), Status: "Active", State: StateOK}
	for _, c := range hpa.Status.Conditions {
		// AbleToScale and ScalingActive are good when True; ScalingLimited is a fact.
		abnormal := c.Status != corev1.ConditionTrue && c.Type != autoscalingv2.ScalingLimited
		if abnormal {
			n.Status, n.State = "Inactive", StateWarning
		}
		n.Conditions = append(n.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Since: c.LastTransitionTime.Time, Abnormal: abnormal})
	}
	n.Details = append(n.Details, value("replicas", fmt.Sprintf("%d-%d", ptr.Deref(hpa.Spec.MinReplicas, 1), hpa.Spec.MaxReplicas)))
	current := map[corev1.ResourceName]int32{}
	for _, m := range hpa.Status.CurrentMetrics {
		if m.Resource != nil && m.Resource.Current.AverageUtilization != nil {
			current[m.Resource.Name] = *m.Resource.Current.AverageUtilization
		}
	}
	for _, m := range hpa.Spec.Metrics {
		if m.Resource == nil || m.Resource.Target.AverageUtilization == nil {
			n.Details = append(n.Details, value("metric", string(m.Type)))
			continue
		}
		reading := "?"
		if c, ok := current[m.Resource.Name]; ok {
			reading = fmt.Sprintf("%d%%", c)
		}
		n.Details = append(n.Details, value(string(m.Resource.Name), fmt.Sprintf("%s/%d%%", reading, *m.Resource.Target.AverageUtilization)))
	}
	return n
}

// ingressNode is an Ingress: Ready once a controller gave it an address, Pending before
// (no ingress controller takes it, or not yet); its hosts and address.
func ingressNode(ing *networkingv1.Ingress) *Node {
	n := &Node{Kind: "Ingress", Name: ing.Name, Created: ing.CreationTimestamp.Time, Status: "Pending", State: StateWarning}
	var addrs []string
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			addrs = append(addrs, lb.IP)
		} else if lb.Hostname != "" {
			addrs = append(addrs, lb.Hostname)
		}
	}
	if len(addrs) > 0 {
		n.Status, n.State = "Ready", StateOK
	}
	var hosts []string
	for _, r := range ing.Spec.Rules {
		if r.Host != "" && !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) > 0 {
		n.Details = append(n.Details, value("hosts", strings.Join(hosts, ",")))
	}
	if len(ing.Spec.TLS) > 0 {
		n.Details = append(n.Details, value("tls", "yes"))
	}
	if len(addrs) > 0 {
		n.Details = append(n.Details, value("address", strings.Join(addrs, ",")))
	}
	return n
}

// routeNode is a Gateway API HTTPRoute: Accepted when every Gateway that reported on it
// accepted it, NotAccepted (with the Gateway's reason) when one did not, Pending while
// none has reported; its hostnames and Gateways.
func routeNode(r *gatewayv1.HTTPRoute) *Node {
	n := &Node{Kind: "HTTPRoute", Name: r.Name, Created: r.CreationTimestamp.Time, Status: "Pending", State: StateWarning}
	accepted := 0
	for _, p := range r.Status.Parents {
		for _, c := range p.Conditions {
			if c.Type != string(gatewayv1.RouteConditionAccepted) {
				continue
			}
			if c.Status == metav1.ConditionTrue {
				accepted++
				continue
			}
			n.Status, n.State = "NotAccepted", StateError
			n.Conditions = append(n.Conditions, Condition{Type: c.Type + " by " + string(p.ParentRef.Name), Status: string(c.Status),
				Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time, Abnormal: true})
		}
	}
	if accepted > 0 && n.State != StateError {
		n.Status, n.State = "Accepted", StateOK
	}
	var hosts, gateways []string
	for _, h := range r.Spec.Hostnames {
		hosts = append(hosts, string(h))
	}
	for _, p := range r.Spec.ParentRefs {
		gw := string(p.Name)
		if p.Namespace != nil {
			gw = string(*p.Namespace) + "/" + gw
		}
		gateways = append(gateways, gw)
	}
	if len(hosts) > 0 {
		n.Details = append(n.Details, value("hosts", strings.Join(hosts, ",")))
	}
	if len(gateways) > 0 {
		n.Details = append(n.Details, value("gateway", strings.Join(gateways, ",")))
	}
	return n
}
