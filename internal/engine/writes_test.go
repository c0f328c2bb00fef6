package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// These tests look at what the write operations account for (the metric, the own-write
// tracking, the events); the API server's side of the writes is exercised by the
// envtests of the controllers that use them (database, backup).

// writeScope is a Scope for App "web" in namespace "shop" on a fake client, with the
// events it records.
func writeScope(t *testing.T, objs ...client.Object) (*Scope[*mooringv1.App], *events.FakeRecorder) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := mooringv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	app := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "app-uid"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(objs, app)...).Build()
	rec := events.NewFakeRecorder(10)
	return &Scope[*mooringv1.App]{
		Object: app, Client: c, Log: logr.Discard(), reader: c, scheme: scheme, recorder: rec,
		component: "app", applied: map[childKey]struct{}{}, writes: newOwnWrites(),
	}, rec
}

func operations(kind, result string) float64 {
	return testutil.ToFloat64(childWrites.WithLabelValues(kind, result))
}

func drained(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestCreateOnceCreatesOnceAndAccountsForIt(t *testing.T) {
	s, rec := writeScope(t)
	ctx := context.Background()
	created0 := operations("Job", changeCreated)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "web-migrate", Labels: map[string]string{"x": "y"}}}

	created, err := s.CreateOnce(ctx, job)
	if err != nil || !created {
		t.Fatalf("first CreateOnce: created %v, err %v", created, err)
	}
	if got := operations("Job", changeCreated) - created0; got != 1 {
		t.Errorf("a create counted %v times in %s", got, "mooring_child_operations_total")
	}
	if !metav1.IsControlledBy(job, s.Object) || job.Namespace != "shop" || job.Labels[mooringv1.InstanceLabel] != "web" || job.Labels["x"] != "y" {
		t.Errorf("a child gets the owner's namespace, labels and controller reference: %+v", job.ObjectMeta)
	}
	// Its create event is the reconcile's own: it queues nothing.
	owner := &countingHandler{}
	h := &childHandler{gvk: batchv1.SchemeGroupVersion.WithKind("Job"), writes: s.writes, owner: owner}
	h.Create(ctx, event.CreateEvent{Object: job}, nil)
	if owner.create != 0 {
		t.Error("the create event of CreateOnce's create queued the owner")
	}

	// Never again, and never an update: the second call writes nothing.
	again := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "web-migrate", Labels: map[string]string{"x": "changed"}}}
	created, err = s.CreateOnce(ctx, again)
	if err != nil || created {
		t.Fatalf("second CreateOnce: created %v, err %v", created, err)
	}
	if got := operations("Job", changeCreated) - created0; got != 1 {
		t.Errorf("CreateOnce of an existing object counted a create (%v)", got)
	}
	live := &batchv1.Job{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web-migrate"}, live); err != nil || live.Labels["x"] != "y" {
		t.Errorf("the existing Job was changed (labels %v, err %v)", live.Labels, err)
	}
	s.reportChanges()
	if got := drained(rec); len(got) != 1 || !strings.Contains(got[0], "Job web-migrate created") {
		t.Errorf("events %q, want one summary naming the created Job", got)
	}
}

func TestCreateOnceRefusesAnotherOwnersObject(t *testing.T) {
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-credentials"}}
	s, _ := writeScope(t, foreign)
	_, err := s.CreateOnce(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-credentials"}})
	if err == nil || !strings.Contains(err.Error(), "not controlled by") {
		t.Fatalf("an owned create over somebody else's Secret: err %v, want one saying it is not controlled by the App", err)
	}
	// Unowned, telling it from somebody else's is the caller's business.
	created, err := s.CreateOnce(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-credentials"}}, Unowned())
	if err != nil || created {
		t.Fatalf("unowned CreateOnce of an existing Secret: created %v, err %v", created, err)
	}
}

func TestCreateOnceUnownedAnnounced(t *testing.T) {
	s, rec := writeScope(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-credentials", Labels: map[string]string{"a": "b"}}}
	created, err := s.CreateOnce(context.Background(), secret, Unowned(),
		Announce(corev1.EventTypeNormal, EventCreated, "Create", "Generated credentials Secret web-credentials"))
	if err != nil || !created {
		t.Fatalf("created %v, err %v", created, err)
	}
	if len(secret.OwnerReferences) != 0 || len(secret.Labels) != 1 || secret.Namespace != "shop" {
		t.Errorf("an unowned object is created as given, in the owner's namespace: %+v", secret.ObjectMeta)
	}
	s.reportChanges()
	if got := drained(rec); len(got) != 1 || got[0] != "Normal Created Generated credentials Secret web-credentials" {
		t.Errorf("events %q, want the announced one alone", got)
	}
}

func TestPatchIsAnOwnWrite(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data-web-0", ResourceVersion: "5"}}
	s, rec := writeScope(t, pvc)
	ctx := context.Background()
	updated0 := operations("PersistentVolumeClaim", changeUpdated)
	live := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(pvc), live); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(live.DeepCopy())
	live.Annotations = map[string]string{"mooring.dev/kept": "why"}
	if err := s.Patch(ctx, live, patch, Silent()); err != nil {
		t.Fatal(err)
	}
	if got := operations("PersistentVolumeClaim", changeUpdated) - updated0; got != 1 {
		t.Errorf("a patch counted %v times", got)
	}
	owner := &countingHandler{}
	h := &childHandler{gvk: corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), writes: s.writes, owner: owner}
	h.Update(ctx, event.UpdateEvent{ObjectOld: pvc, ObjectNew: live}, nil)
	if owner.update != 0 {
		t.Error("the update event of the reconcile's own patch queued the owner")
	}
	s.reportChanges()
	if got := drained(rec); len(got) != 0 {
		t.Errorf("a silent patch made events %q", got)
	}
	// A refusal comes back as the API server's error, for the caller to tell apart.
	gone := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "gone"}}
	if err := s.Patch(ctx, gone, client.MergeFrom(gone.DeepCopy())); !apierrors.IsNotFound(err) {
		t.Errorf("patch of a missing PVC: err %v, want NotFound", err)
	}
}

func TestDeleteExact(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-final", UID: "job-1"}}
	s, rec := writeScope(t, job)
	ctx := context.Background()
	deleted0 := operations("Job", changeDeleted)

	// (The UID precondition is the API server's to enforce: the fake client ignores it.)
	being := job.DeepCopy()
	being.DeletionTimestamp = &metav1.Time{}
	if err := s.DeleteExact(ctx, being, ""); err != nil {
		t.Fatalf("deleting a Job already being deleted: %v", err)
	}
	if got := operations("Job", changeDeleted) - deleted0; got != 0 {
		t.Errorf("a delete that was not sent counted %v", got)
	}
	if err := s.DeleteExact(ctx, job, metav1.DeletePropagationForeground); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteExact(ctx, job, ""); err != nil {
		t.Fatalf("deleting a Job already gone: %v", err)
	}
	if got := operations("Job", changeDeleted) - deleted0; got != 1 {
		t.Errorf("deletes counted %v, want 1", got)
	}
	s.reportChanges()
	if got := drained(rec); len(got) != 1 || !strings.Contains(got[0], "Deleted Job web-final deleted") {
		t.Errorf("events %q, want one summary of the deletion", got)
	}
}

func TestOwnWritesTrackOnlyWatchedKinds(t *testing.T) {
	w := newOwnWrites()
	jobs, pods := batchv1.SchemeGroupVersion.WithKind("Job"), corev1.SchemeGroupVersion.WithKind("Pod")
	w.track(jobs)
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "x", ResourceVersion: "3"}}
	w.record(jobs, obj)
	w.record(pods, obj)
	if !w.expected(jobs, obj, false) {
		t.Error("a write of a watched kind is not expected")
	}
	if len(w.pending) != 0 {
		t.Errorf("writes of a kind no watch consults are remembered: %v", w.pending)
	}
}

func TestJobPhase(t *testing.T) {
	failed := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}}}
	if got := JobPhase(failed); !got.Finished() || got.Failure() != "DeadlineExceeded: Job was active longer than specified deadline" {
		t.Errorf("JobPhase of a failed Job: %+v", got)
	}
}
