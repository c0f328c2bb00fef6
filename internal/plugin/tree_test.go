package plugin

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/objecttree"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// uids numbers the objects of a test: objects of different kinds may share a name.
var uids int

// om is ObjectMeta created ago before now, owned by owner when given.
func om(name string, ago time.Duration, owner metav1.Object) metav1.ObjectMeta {
	uids++
	m := metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(fmt.Sprintf("uid-%d", uids)), CreationTimestamp: metav1.NewTime(now.Add(-ago))}
	if owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{{UID: owner.GetUID(), Name: owner.GetName(), Controller: ptr.To(true)}}
	}
	return m
}

func readyPod(name string, owner metav1.Object, node string, ready bool, restarts int32, labels map[string]string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: om(name, 20*time.Minute, owner), Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}}}
	p.Labels = labels
	p.Status.Phase = corev1.PodRunning
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, Reason: "ContainersNotReady", Message: "containers with unready status: [c]"}}
	if ready {
		p.Status.Conditions[0].Reason, p.Status.Conditions[0].Message = "", ""
	}
	cs := corev1.ContainerStatus{Name: "c", Ready: ready, RestartCount: restarts}
	if !ready {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p
}

// rolloutSnapshot is an App in the middle of a rollout (old and new ReplicaSet, one new
// pod crashing) and a DatabaseCluster with its Backup, whose last Job failed.
func rolloutSnapshot() *objecttree.Snapshot {
	app := mooringv1.App{ObjectMeta: om("web", time.Hour, nil), Spec: mooringv1.AppSpec{Image: "nginx:1.28", Replicas: ptr.To(int32(2))}}
	app.Status = mooringv1.AppStatus{Phase: mooringv1.AppNotReady, AvailableReplicas: 1, Conditions: []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ReplicasUnavailable", Message: "1 of 2 replicas available."},
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "RollingOut", Message: "1 of 2 replicas updated."},
	}}
	dep := appsv1.Deployment{ObjectMeta: om("web", time.Hour, &app), Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2))},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 1, AvailableReplicas: 1}}
	dep.Generation = 2
	oldRS := appsv1.ReplicaSet{ObjectMeta: om("web-6d4cf56db6", time.Hour, &dep), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(1))},
		Status: appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 1}}
	oldRS.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	goneRS := appsv1.ReplicaSet{ObjectMeta: om("web-55b8c9d7f", 2*time.Hour, &dep), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(0))}}
	newRS := appsv1.ReplicaSet{ObjectMeta: om("web-7f9c8b5d4", 5*time.Minute, &dep), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(1))},
		Status: appsv1.ReplicaSetStatus{Replicas: 1}}
	newRS.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2"}

	db := v1beta1.DatabaseCluster{ObjectMeta: om("orders", 3*24*time.Hour, nil), Spec: v1beta1.DatabaseClusterSpec{
		Engine: "postgresql", Version: "18", ReplicaCount: 2, SecretName: "orders-credentials"}}
	db.Status = v1beta1.DatabaseClusterStatus{Phase: v1beta1.DatabaseRunning, ReadyReplicas: 2, PrimaryEndpoint: "orders.shop.svc:5432"}
	sts := appsv1.StatefulSet{ObjectMeta: om("orders", 3*24*time.Hour, &db), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(2)),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: 2, UpdatedReplicas: 2}}
	pvc := func(name string, phase corev1.PersistentVolumeClaimPhase) corev1.PersistentVolumeClaim {
		c := corev1.PersistentVolumeClaim{ObjectMeta: om(name, 3*24*time.Hour, nil)}
		c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
		c.Status.Phase = phase
		return c
	}
	backup := mooringv1.Backup{ObjectMeta: om("orders-nightly", 2*24*time.Hour, nil), Spec: mooringv1.BackupSpec{
		DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "0 3 * * *"}}
	backup.Status = mooringv1.BackupStatus{Phase: mooringv1.BackupFailed,
		LastSuccessfulTime: &metav1.Time{Time: now.Add(-33 * time.Hour)}, LastFailedTime: &metav1.Time{Time: now.Add(-9 * time.Hour)},
		Conditions: []metav1.Condition{{Type: "LastBackupSucceeded", Status: metav1.ConditionFalse, Reason: "BackupFailed", Message: "Job orders-nightly-29461980 failed."}}}
	cj := batchv1.CronJob{ObjectMeta: om("orders-nightly", 2*24*time.Hour, &backup), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *"}}
	job := func(name string, ago time.Duration, failed bool) batchv1.Job {
		j := batchv1.Job{ObjectMeta: om(name, ago, &cj)}
		start := metav1.NewTime(now.Add(-ago))
		j.Status.StartTime = &start
		if failed {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
		} else {
			done := metav1.NewTime(now.Add(-ago + 42*time.Second))
			j.Status.CompletionTime, j.Status.Succeeded = &done, 1
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}
		return j
	}
	return &objecttree.Snapshot{
		Apps: []mooringv1.App{app}, Deployments: []appsv1.Deployment{dep}, ReplicaSets: []appsv1.ReplicaSet{oldRS, goneRS, newRS},
		Pods: []corev1.Pod{
			readyPod("web-6d4cf56db6-x7k2p", &oldRS, "node-1", true, 0, nil),
			readyPod("web-7f9c8b5d4-q9z4m", &newRS, "node-2", false, 4, nil),
			readyPod("orders-0", &sts, "node-1", true, 0, map[string]string{appsv1.PodIndexLabel: "0"}),
			readyPod("orders-1", &sts, "node-3", true, 1, map[string]string{appsv1.PodIndexLabel: "1"}),
		},
		Services: []corev1.Service{
			{ObjectMeta: om("web", time.Hour, &app), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}},
			{ObjectMeta: om("orders", 3*24*time.Hour, &db), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 5432, Protocol: corev1.ProtocolTCP}}}},
		},
		ConfigMaps: []corev1.ConfigMap{{ObjectMeta: om("web-config", time.Hour, &app), Data: map[string]string{"config": "x"}},
			{ObjectMeta: om("orders-binding", 3*24*time.Hour, &db), Data: map[string]string{"host": "orders.shop.svc", "port": "5432"}}},
		Autoscalers: []autoscalingv2.HorizontalPodAutoscaler{{ObjectMeta: om("web", time.Hour, &app),
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To(int32(2)), MaxReplicas: 6, Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(70))}}}}},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 2, CurrentMetrics: []autoscalingv2.MetricStatus{{
				Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
					Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(int32(35))}}}},
				Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound"}}}}},
		Ingresses: []networkingv1.Ingress{{ObjectMeta: om("web", time.Hour, &app), Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: "web.example.com"}}, TLS: []networkingv1.IngressTLS{{Hosts: []string{"web.example.com"}}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.7"}}}}}},
		Databases:    []v1beta1.DatabaseCluster{db},
		StatefulSets: []appsv1.StatefulSet{sts},
		Claims:       []corev1.PersistentVolumeClaim{pvc("data-orders-0", corev1.ClaimBound), pvc("data-orders-1", corev1.ClaimBound), pvc("data-other-0", corev1.ClaimBound), pvc("orders-nightly-storage", corev1.ClaimPending)},
		Backups:      []mooringv1.Backup{backup},
		CronJobs:     []batchv1.CronJob{cj},
		Jobs: []batchv1.Job{job("orders-nightly-29460540", 33*time.Hour, false), job("orders-nightly-29461980", 9*time.Hour, true),
			job("orders-nightly-29459100", 57*time.Hour, false), job("orders-nightly-29457660", 81*time.Hour, false)},
		// The Secret is known by its metadata only.
		Secrets: []metav1.PartialObjectMetadata{{ObjectMeta: om("orders-credentials", 3*24*time.Hour, nil)}, {ObjectMeta: om("orders-admin", 3*24*time.Hour, nil)}},
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test ./internal/plugin -update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// The trees and their drawing, from objects alone: a rollout half done (the old
// ReplicaSet scaled to zero hidden, the crashing pod and the conditions that explain the
// phase shown) with its autoscaler and Ingress, a database with its volumes (not another
// StatefulSet's), its binding ConfigMap, its Secrets by name, its Backup with the three
// newest Jobs and the next run.
func TestRenderTrees(t *testing.T) {
	tests := map[string]renderOptions{
		"tree.txt":                 {Now: now},
		"tree-show-conditions.txt": {Now: now, ShowConditions: true},
		"tree-all-namespaces.txt":  {Now: now, Namespaces: true},
		"tree-color.txt":           {Now: now, Color: true},
	}
	for golden, o := range tests {
		t.Run(golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := renderTrees(&b, rolloutSnapshot().Roots(now), o); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, golden, b.String())
		})
	}
}

func TestRenderNothing(t *testing.T) {
	var b bytes.Buffer
	if err := renderTrees(&b, (&objecttree.Snapshot{}).Roots(now), renderOptions{Now: now}); err != nil {
		t.Fatal(err)
	}
	if b.String() != "No Mooring objects found.\n" {
		t.Errorf("empty namespace: %q", b.String())
	}
}

// -o json and -o yaml carry the same tree; KIND/NAME gives one object, else items.
func TestWriteData(t *testing.T) {
	roots := rolloutSnapshot().Roots(now)
	var js, ys bytes.Buffer
	if err := writeData(&js, "json", roots, false); err != nil {
		t.Fatal(err)
	}
	if err := writeData(&ys, "yaml", roots, false); err != nil {
		t.Fatal(err)
	}
	var fromJSON struct{ Items []*objecttree.Node }
	if err := json.Unmarshal(js.Bytes(), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if len(fromJSON.Items) != 2 || fromJSON.Items[1].Kind != "DatabaseCluster" {
		t.Fatalf("items: %+v", fromJSON.Items)
	}
	if !strings.Contains(ys.String(), "- children:") || !strings.Contains(ys.String(), "name: next run") {
		t.Errorf("yaml lacks the tree:\n%s", ys.String())
	}
	if strings.Contains(js.String(), "password") {
		t.Error("a Secret's data in the output")
	}
	var single bytes.Buffer
	if err := writeData(&single, "json", roots[:1], true); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(single.String(), "{\n  \"kind\": \"App\"") {
		t.Errorf("KIND/NAME as json is not the object itself:\n%s", single.String()[:80])
	}
}

func TestPick(t *testing.T) {
	roots := rolloutSnapshot().Roots(now)
	k, _ := lookupKind("backup")
	got := pick(roots, ref{kind: k, name: "orders-nightly"})
	if len(got) != 1 || got[0].Kind != "Backup" || got[0].Namespace != "shop" {
		t.Fatalf("pick backup/orders-nightly = %+v", got)
	}
	if got := pick(roots, ref{kind: k, name: "absent"}); got != nil {
		t.Errorf("pick of a missing object = %+v", got)
	}
}
