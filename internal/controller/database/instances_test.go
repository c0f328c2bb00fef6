package database

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/instance"
)

func pod(name string, ready bool) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
}

func answer(role string, seq int64, streaming bool) *instance.Status {
	return &instance.Status{Running: true, Ready: true, Observation: &instance.Observation{Role: role, Sequence: ptr.To(seq), Streaming: streaming}}
}

// Each replica's lag is the primary's position less its own, in bytes for PostgreSQL and
// in transactions for MariaDB; what the managers say or cannot say becomes the message.
func TestInstanceStatuses(t *testing.T) {
	pods := []corev1.Pod{pod("orders-0", true), pod("orders-1", true), pod("orders-2", false), pod("orders-3", false)}
	answers := []*instance.Status{
		answer(instance.RolePrimary, 5000, false),
		answer(instance.RoleReplica, 4000, true),
		{Fault: &instance.Fault{Reason: instance.FaultDiskFull, Message: "the data volume has 1 KiB free"}},
		nil,
	}
	errs := []error{nil, nil, nil, errors.New("connection refused")}
	for _, e := range []v1beta1.DatabaseEngine{v1beta1.PostgreSQL, v1beta1.MariaDB} {
		got := instanceStatuses(newDB(e, nil), pods, answers, errs)
		lag := got[1].LagBytes
		if e == v1beta1.MariaDB {
			lag = got[1].GTIDGap
		}
		if got[0].Role != v1beta1.RolePrimary || !got[0].Ready || got[0].LagBytes != nil ||
			got[1].Role != v1beta1.RoleReplica || lag == nil || *lag != 1000 || got[1].Message != "" ||
			!strings.HasPrefix(got[2].Message, "DiskFull: ") || got[2].Ready ||
			!strings.Contains(got[3].Message, "connection refused") {
			t.Errorf("%s: %+v", e, got)
		}
	}
}

// ReplicationHealthy: True with every replica streaming and caught up, False naming the
// replica that does not stream or lags too far, Unknown while a replica says nothing.
func TestReplicationHealth(t *testing.T) {
	replica := func(name string, lag int64, msg string) v1beta1.InstanceStatus {
		return v1beta1.InstanceStatus{Name: name, Role: v1beta1.RoleReplica, Ready: true, LagBytes: ptr.To(lag), Message: msg}
	}
	primary := v1beta1.InstanceStatus{Name: "orders-0", Role: v1beta1.RolePrimary, Ready: true}
	for name, c := range map[string]struct {
		replicas  int32
		instances []v1beta1.InstanceStatus
		status    metav1.ConditionStatus
		reason    string
		mentions  string
	}{
		"no replicas":   {1, []v1beta1.InstanceStatus{primary}, metav1.ConditionTrue, v1beta1.ReasonNoReplicas, ""},
		"caught up":     {3, []v1beta1.InstanceStatus{primary, replica("orders-1", 0, ""), replica("orders-2", 100, "")}, metav1.ConditionTrue, v1beta1.ReasonReplicasStreaming, ""},
		"broken":        {3, []v1beta1.InstanceStatus{primary, replica("orders-1", 0, ""), replica("orders-2", 0, "Not streaming from the primary.")}, metav1.ConditionFalse, v1beta1.ReasonReplicaNotStreaming, "orders-2"},
		"behind":        {2, []v1beta1.InstanceStatus{primary, replica("orders-1", maxLagBytes+1, "")}, metav1.ConditionFalse, v1beta1.ReasonReplicaLagging, "orders-1"},
		"not yet there": {3, []v1beta1.InstanceStatus{primary, replica("orders-1", 0, "")}, metav1.ConditionUnknown, v1beta1.ReasonReplicaUnknown, "1 of 2"},
	} {
		db := newDB(v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = c.replicas })
		db.Status.Instances = c.instances
		status, reason, msg := replicationHealth(db)
		if status != c.status || reason != c.reason || !strings.Contains(msg, c.mentions) {
			t.Errorf("%s: %s %s %q, want %s %s mentioning %q", name, status, reason, msg, c.status, c.reason, c.mentions)
		}
	}
}

// An instance that lost its volume says why it is not ready: the primary's fault, a
// replica's copy; both turn InstancesHealthy False with their reason.
func TestInstanceStatusesOfLostVolumes(t *testing.T) {
	pods := []corev1.Pod{pod("orders-0", false), pod("orders-1", false)}
	answers := []*instance.Status{
		{Fault: &instance.Fault{Reason: instance.FaultPrimaryDataLost, Message: "the primary's data volume is empty"}},
		{Running: true, Cloning: true, Phase: "Starting", Error: "waiting for the primary"},
	}
	got := instanceStatuses(newDB(v1beta1.PostgreSQL, nil), pods, answers, []error{nil, nil})
	if !strings.HasPrefix(got[0].Message, "PrimaryDataLost: ") || !strings.HasPrefix(got[1].Message, "Cloning: ") ||
		!strings.Contains(got[1].Message, "waiting for the primary") {
		t.Errorf("messages %q, %q: want PrimaryDataLost and Cloning with the last error", got[0].Message, got[1].Message)
	}
	for _, r := range []string{instance.FaultPrimaryDataLost, ReasonCloning} {
		if !isFaultReason(r) {
			t.Errorf("%s does not turn InstancesHealthy False", r)
		}
	}
}
