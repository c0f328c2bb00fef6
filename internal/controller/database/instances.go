package database

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/instance"
)

const (
	// maxLagBytes and maxGTIDGap: a replica further behind counts as lagging.
	maxLagBytes = 64 << 20
	maxGTIDGap  = 1000
	// instancePollInterval is how often a cluster with replicas, or with an instance
	// that is not well, is asked again; nothing is written while the answers stay the same.
	instancePollInterval = 30 * time.Second
	statusTimeout        = 3 * time.Second
)

// InstanceClient asks each database pod's instance manager for its /status.
type InstanceClient struct {
	// HTTP is the client; its Timeout bounds each request.
	HTTP *http.Client
	// Port is the status port (instance.StatusPort); tests change it.
	Port int
	// tokens are the clusters' status tokens (statustoken.go).
	tokens statusTokens
}

// NewInstanceClient returns a client for the managers' status port.
func NewInstanceClient() *InstanceClient {
	return &InstanceClient{HTTP: &http.Client{Timeout: statusTimeout}, Port: instance.StatusPort}
}

// status reads one pod's /status with the cluster's token.
func (c *InstanceClient) status(ctx context.Context, ip, token string) (*instance.Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, strconv.Itoa(c.Port))+"/status", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close() //nolint:errcheck // a read-only body
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	s := &instance.Status{}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, err
	}
	return s, nil
}

// observeInstances asks every database pod of the cluster for its status, in parallel,
// and sets status.instances, InstancesHealthy and ReplicationHealthy. It reports whether
// the cluster should be asked again soon.
func (h Handler) observeInstances(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (bool, error) {
	db := s.Object
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods, client.InNamespace(db.Namespace), client.MatchingLabels(engine.SelectorLabels(Component, db.Name))); err != nil {
		return false, fmt.Errorf("list pods: %w", err)
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	slices.SortFunc(live, func(a, b corev1.Pod) int { return podIndex(a.Name) - podIndex(b.Name) })
	if err := labelRoles(ctx, s, live); err != nil {
		return false, err
	}
	answers := make([]*instance.Status, len(live))
	errs := make([]error, len(live))
	if h.Instances != nil {
		token, err := h.statusToken(ctx, s)
		if err != nil {
			return false, err
		}
		var wg sync.WaitGroup
		for i, p := range live {
			if p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i], errs[i] = h.Instances.status(ctx, p.Status.PodIP, token)
			}()
		}
		wg.Wait()
	}
	db.Status.Instances = instanceStatuses(db, live, answers, errs)
	unwell := setInstanceConditions(s)
	return len(live) > 0 && (len(live) > 1 || unwell), nil
}

// podIndex is the ordinal at the end of a StatefulSet pod's name.
func podIndex(name string) int {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return -1
	}
	return n
}

// instanceStatuses turns the managers' answers into status.instances, with each
// replica's lag against the primary's position.
func instanceStatuses(db *v1beta1.DatabaseCluster, pods []corev1.Pod, answers []*instance.Status, errs []error) []v1beta1.InstanceStatus {
	var primarySeq *int64
	for i, p := range pods {
		if p.Name == PrimaryPodName(db) && answers[i] != nil && answers[i].Observation != nil && answers[i].Observation.Role == instance.RolePrimary {
			primarySeq = answers[i].Observation.Sequence
		}
	}
	out := make([]v1beta1.InstanceStatus, 0, len(pods))
	for i, p := range pods {
		st := v1beta1.InstanceStatus{Name: p.Name, Role: v1beta1.RoleReplica, Ready: podReady(&p)}
		if p.Name == PrimaryPodName(db) {
			st.Role = v1beta1.RolePrimary
		}
		a := answers[i]
		switch {
		case a == nil && errs[i] != nil:
			st.Message = "The instance manager does not answer: " + errs[i].Error()
		case a == nil:
			st.Message = "The pod is not running yet."
		case a.Fault != nil:
			st.Message = a.Fault.Reason + ": " + a.Fault.Message
		case a.Cloning:
			st.Message = cloningMessage(a)
		case a.Observation == nil:
			st.Message = "The server is " + strings.ToLower(a.Phase) + "."
			if a.Error != "" {
				st.Message += " Last error: " + a.Error
			}
		default:
			o := a.Observation
			st.Role = v1beta1.InstanceRole(o.Role)
			if st.Role == v1beta1.RoleReplica && primarySeq != nil && o.Sequence != nil {
				lag := max(*primarySeq-*o.Sequence, 0)
				if db.Spec.Engine == v1beta1.PostgreSQL {
					st.LagBytes = &lag
				} else {
					st.GTIDGap = &lag
				}
			}
			if st.Role == v1beta1.RoleReplica && !o.Streaming {
				st.Message = "Not streaming from the primary."
				if o.ReplicationError != "" {
					st.Message += " " + o.ReplicationError
				}
			}
		}
		out = append(out, st)
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setInstanceConditions derives InstancesHealthy and ReplicationHealthy from
// status.instances, with a Warning event when either turns False and a Normal one when
// replication recovers. It reports whether a condition is not True.
func setInstanceConditions(s *engine.Scope[*v1beta1.DatabaseCluster]) bool {
	db := s.Object
	var faults []string
	faultReason := ""
	for _, in := range db.Status.Instances {
		if reason, _, ok := strings.Cut(in.Message, ": "); ok && isFaultReason(reason) {
			faults = append(faults, in.Name+": "+in.Message)
			faultReason = reason
		}
	}
	if len(faults) > 0 {
		setWarned(s, v1beta1.ConditionInstancesHealthy, metav1.ConditionFalse, faultReason, strings.Join(faults, " "))
	} else {
		engine.SetCondition(db, v1beta1.ConditionInstancesHealthy, metav1.ConditionTrue, v1beta1.ReasonInstancesRunning, "No instance reports a fault.")
	}

	status, reason, msg := replicationHealth(db)
	if status == metav1.ConditionFalse {
		setWarned(s, v1beta1.ConditionReplicationHealthy, status, reason, msg)
	} else {
		if status == metav1.ConditionTrue && apimeta.IsStatusConditionFalse(db.Status.Conditions, v1beta1.ConditionReplicationHealthy) {
			s.Event(corev1.EventTypeNormal, reason, "Replication", msg)
		}
		engine.SetCondition(db, v1beta1.ConditionReplicationHealthy, status, reason, msg)
	}
	return len(faults) > 0 || status != metav1.ConditionTrue
}

// setWarned sets a False condition and records a Warning event when it was not already
// False for the same reason (not on every poll).
func setWarned(s *engine.Scope[*v1beta1.DatabaseCluster], cond string, status metav1.ConditionStatus, reason, msg string) {
	if !engine.HasCondition(s.Object, cond, status, reason) {
		s.Event(corev1.EventTypeWarning, reason, cond, msg)
	}
	engine.SetCondition(s.Object, cond, status, reason, msg)
}

func isFaultReason(r string) bool {
	switch r {
	case instance.FaultMissingBinaries, instance.FaultVersionMismatch, instance.FaultUnknownData, instance.FaultDiskFull,
		instance.FaultCloneFailed, instance.FaultInitFailed, instance.FaultServerFailed, instance.FaultPrimaryDataLost, ReasonCloning:
		return true
	}
	return false
}

// replicationHealth judges the replicas in status.instances.
func replicationHealth(db *v1beta1.DatabaseCluster) (metav1.ConditionStatus, string, string) {
	want := max(db.Spec.ReplicaCount, 1)
	if want == 1 {
		return metav1.ConditionTrue, v1beta1.ReasonNoReplicas, "The cluster has no replicas."
	}
	var notStreaming, lagging, unknown []string
	seen := 0
	for _, in := range db.Status.Instances {
		if in.Name == PrimaryPodName(db) {
			continue
		}
		seen++
		switch {
		case in.Role != v1beta1.RoleReplica || (in.LagBytes == nil && in.GTIDGap == nil):
			unknown = append(unknown, in.Name)
		case in.Message != "":
			notStreaming = append(notStreaming, in.Name+" ("+in.Message+")")
		case in.LagBytes != nil && *in.LagBytes > maxLagBytes:
			lagging = append(lagging, fmt.Sprintf("%s (%d bytes behind)", in.Name, *in.LagBytes))
		case in.GTIDGap != nil && *in.GTIDGap > maxGTIDGap:
			lagging = append(lagging, fmt.Sprintf("%s (%d transactions behind)", in.Name, *in.GTIDGap))
		}
	}
	switch {
	case len(notStreaming) > 0:
		return metav1.ConditionFalse, v1beta1.ReasonReplicaNotStreaming, "Replicas not streaming from the primary: " + strings.Join(notStreaming, ", ") + "."
	case len(lagging) > 0:
		return metav1.ConditionFalse, v1beta1.ReasonReplicaLagging, "Replicas behind the primary: " + strings.Join(lagging, ", ") + "."
	case len(unknown) > 0 || int32(seen) < want-1:
		return metav1.ConditionUnknown, v1beta1.ReasonReplicaUnknown, fmt.Sprintf("%d of %d replicas report their position; waiting for %v.", seen-len(unknown), want-1, unknown)
	}
	return metav1.ConditionTrue, v1beta1.ReasonReplicasStreaming, fmt.Sprintf("%d replicas stream from the primary and are caught up.", want-1)
}
