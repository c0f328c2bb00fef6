package database_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
)

// waitCredentials waits for status.credentials at revision and CredentialsSynced with
// status and reason; it returns the cluster as it then is.
func waitCredentials(t *testing.T, key types.NamespacedName, revision int64, status metav1.ConditionStatus, reason string) *v1beta1.DatabaseCluster {
	t.Helper()
	got := &v1beta1.DatabaseCluster{}
	testutil.WaitFor(t, env.Client, key, got, fmt.Sprintf("credentials revision %d, CredentialsSynced=%s %s", revision, status, reason), func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionCredentialsSynced)
		if d.Status.Credentials == nil || d.Status.Credentials.Revision != revision || c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("credentials %+v CredentialsSynced %+v", d.Status.Credentials, c)
		}
		return nil
	})
	return got
}

// credentialsJobs lists the cluster's credentials Jobs.
func credentialsJobs(t *testing.T, ns string) []batchv1.Job {
	t.Helper()
	jobs := &batchv1.JobList{}
	if err := env.Client.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels{v1beta1.CredentialsJobLabel: "credentials"}); err != nil {
		t.Fatal(err)
	}
	return jobs.Items
}

// waitCredentialsJob waits for the one credentials Job whose name is not in not.
func waitCredentialsJob(t *testing.T, ns string, not ...string) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	testutil.Eventually(t, testutil.DefaultTimeout, "a new credentials Job", func() error {
		var fresh []batchv1.Job
		for _, j := range credentialsJobs(t, ns) {
			if !slicesContains(not, j.Name) && j.DeletionTimestamp == nil {
				fresh = append(fresh, j)
			}
		}
		if len(fresh) != 1 {
			return fmt.Errorf("%d new credentials Jobs", len(fresh))
		}
		job = &fresh[0]
		return nil
	})
	return job
}

func setPassword(t *testing.T, ns, secret, password string) {
	t.Helper()
	testutil.Update(t, env.Client, types.NamespacedName{Namespace: ns, Name: secret}, &corev1.Secret{}, func(s *corev1.Secret) {
		s.Data[database.PasswordKey] = []byte(password)
	})
}

func password(t *testing.T, ns, secret string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: secret}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[database.PasswordKey])
}

// A running cluster (one ready pod) whose credentials were recorded at revision 1.
func runningCluster(t *testing.T, ns, name string) (types.NamespacedName, *v1beta1.DatabaseCluster) {
	t.Helper()
	db := createDB(t, ns, name, v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 1 })
	key := client.ObjectKeyFromObject(db)
	testutil.WaitFor(t, env.Client, key, &appsv1.StatefulSet{}, "StatefulSet", func(*appsv1.StatefulSet) error { return nil })
	testutil.MarkStatefulSetReady(t, env.Client, key)
	return key, waitCredentials(t, key, 1, metav1.ConditionTrue, v1beta1.ReasonCredentialsInSync)
}

// Changing the password in the credentials Secret changes it in the database, with a
// Job that connects as the superuser (admin Secret) and takes both passwords only by
// secretKeyRef; the revision bound Apps follow advances only when the Job has succeeded.
func TestPasswordRotation(t *testing.T) {
	ns := env.Namespace(t)
	key, db := runningCluster(t, ns, "rotate")
	original, admin := password(t, ns, "rotate-credentials"), password(t, ns, "rotate-admin")
	if len(admin) != 24 || admin == original {
		t.Fatalf("the admin Secret's password is %d characters, the same as the application's: %v", len(admin), admin == original)
	}
	first := db.Status.Credentials.Hash

	const rotated = "rotated-by-hand-Pa55"
	setPassword(t, ns, "rotate-credentials", rotated)
	job := waitCredentialsJob(t, ns)
	waitCredentials(t, key, 1, metav1.ConditionFalse, v1beta1.ReasonCredentialsSyncing)
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeNormal, v1beta1.ReasonCredentialsSyncing, "rotate")

	if !metav1.IsControlledBy(job, db) || !strings.HasPrefix(job.Name, "rotate-credentials-") {
		t.Errorf("Job %s owners %v", job.Name, job.OwnerReferences)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if c.Image != "docker.io/library/postgres:"+db.Spec.Version || len(c.Command) != 3 || c.Command[2] != database.CredentialsScript || len(c.Args) != 0 {
		t.Errorf("image %s command %d parts args %v", c.Image, len(c.Command), c.Args)
	}
	refs := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	if refs["PGPASSWORD"] != "" || refs["APP_PASSWORD"] != "rotate-credentials/password" ||
		refs["APP_USERNAME"] != "rotate-credentials/username" {
		t.Errorf("credentials from %v", refs)
	}
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{rotated, original, admin} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("the Job carries a password: %s", raw)
		}
	}

	testutil.FinishJob(t, env.Client, client.ObjectKeyFromObject(job), true)
	done := waitCredentials(t, key, 2, metav1.ConditionTrue, v1beta1.ReasonCredentialsInSync)
	if done.Status.Credentials.Hash == first || done.Status.Credentials.Hash != job.Annotations[v1beta1.CredentialsHashAnnotation] {
		t.Errorf("credentials %+v after Job for %s", done.Status.Credentials, job.Annotations[v1beta1.CredentialsHashAnnotation])
	}
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeNormal, v1beta1.ReasonCredentialsInSync, "rotate")
	testutil.WaitGone(t, env.Client, client.ObjectKeyFromObject(job), &batchv1.Job{}, "the finished credentials Job")

	for _, secret := range []string{rotated, original, admin} {
		assertNotLeaked(t, ns, secret)
		statusJSON, _ := json.Marshal(done.Status)
		if strings.Contains(string(statusJSON), secret) {
			t.Fatalf("status carries a password: %s", statusJSON)
		}
	}
	// Converged: a reconcile writes nothing and starts no Job.
	testutil.ExpectNoWrites(t, database.Component, 1, func() {
		testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
			d.Annotations = map[string]string{"example.com/touched": "yes"}
		})
	})
	if jobs := credentialsJobs(t, ns); len(jobs) != 0 {
		t.Errorf("credentials Jobs of a converged cluster: %d", len(jobs))
	}
}

// A password changed again while a Job still applies the previous one: that Job is
// stopped (and gone, pod and all) before the next starts, so the older password cannot
// land last. A failed Job is reported and tried again once deleted; the revision stays
// until one succeeds.
func TestPasswordRotationSupersededAndFailed(t *testing.T) {
	ns := env.Namespace(t)
	key, _ := runningCluster(t, ns, "twice")
	setPassword(t, ns, "twice-credentials", "first-change-Pa55")
	first := waitCredentialsJob(t, ns)
	setPassword(t, ns, "twice-credentials", "second-change-Pa55")

	// Play the garbage collector: a foreground deletion waits on its finalizer.
	testutil.Eventually(t, testutil.DefaultTimeout, "the superseded Job deleted in the foreground", func() error {
		j := &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(first), j); err != nil {
			return client.IgnoreNotFound(err)
		}
		if j.DeletionTimestamp == nil {
			return fmt.Errorf("Job %s not deleted yet", j.Name)
		}
		if !slicesContains(j.Finalizers, metav1.FinalizerDeleteDependents) {
			return fmt.Errorf("finalizers %v, want foreground deletion", j.Finalizers)
		}
		if len(credentialsJobs(t, ns)) != 1 {
			return fmt.Errorf("another Job started while %s is still there", j.Name)
		}
		j.Finalizers = nil
		return env.Client.Update(ctx, j)
	})
	second := waitCredentialsJob(t, ns, first.Name)
	if second.Annotations[v1beta1.CredentialsHashAnnotation] == first.Annotations[v1beta1.CredentialsHashAnnotation] {
		t.Fatal("the second Job is for the first password")
	}

	testutil.FinishJob(t, env.Client, client.ObjectKeyFromObject(second), false)
	failed := waitCredentials(t, key, 1, metav1.ConditionFalse, v1beta1.ReasonCredentialsSyncFailed)
	if msg := condition(failed, v1beta1.ConditionCredentialsSynced).Message; !strings.Contains(msg, second.Name) {
		t.Errorf("message %q does not name the Job", msg)
	}
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, v1beta1.ReasonCredentialsSyncFailed, "twice")

	// Deleting the failed Job tries again.
	if err := env.Client.Delete(ctx, second, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.DefaultTimeout, "the Job made again", func() error {
		j := &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(second), j); err != nil {
			return err
		}
		if j.UID == second.UID {
			return fmt.Errorf("still the failed Job")
		}
		return nil
	})
	testutil.FinishJob(t, env.Client, client.ObjectKeyFromObject(second), true)
	waitCredentials(t, key, 2, metav1.ConditionTrue, v1beta1.ReasonCredentialsInSync)
}

// A superuser password that changed is reported, not tried: Mooring could not log in,
// or would log in with a password the database does not have.
func TestAdminPasswordChanged(t *testing.T) {
	ns := env.Namespace(t)
	key, _ := runningCluster(t, ns, "guarded")
	admin := password(t, ns, "guarded-admin")
	setPassword(t, ns, "guarded-admin", "changed-by-hand")
	waitCredentials(t, key, 1, metav1.ConditionFalse, v1beta1.ReasonAdminPasswordChanged)
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, v1beta1.ReasonAdminPasswordChanged, "guarded")

	setPassword(t, ns, "guarded-credentials", "new-app-Pa55")
	testutil.Settle(t)
	waitCredentials(t, key, 1, metav1.ConditionFalse, v1beta1.ReasonAdminPasswordChanged)
	if jobs := credentialsJobs(t, ns); len(jobs) != 0 {
		t.Fatalf("%d credentials Jobs with a changed superuser password", len(jobs))
	}

	// The previous password back: the application's password follows.
	setPassword(t, ns, "guarded-admin", admin)
	job := waitCredentialsJob(t, ns)
	testutil.FinishJob(t, env.Client, client.ObjectKeyFromObject(job), true)
	waitCredentials(t, key, 2, metav1.ConditionTrue, v1beta1.ReasonCredentialsInSync)
	assertNotLeaked(t, ns, admin)
}

// A cluster with data but no admin Secret (made before Mooring kept one) gets one with
// the password its superuser was set up with, the credentials Secret's; once it has had
// one, a deleted admin Secret is not made again.
func TestAdminSecretOfAnExistingCluster(t *testing.T) {
	ns := env.Namespace(t)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-legacy-0", Namespace: ns, Labels: engine.Labels(database.Component, "legacy")},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy-credentials", Namespace: ns},
		StringData: map[string]string{database.UsernameKey: "app", database.PasswordKey: "set-up-with-this"}}
	for _, o := range []client.Object{pvc, creds} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	db := createDB(t, ns, "legacy", v1beta1.MySQL, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 1 })
	key := client.ObjectKeyFromObject(db)
	adminKey := types.NamespacedName{Namespace: ns, Name: "legacy-admin"}
	admin := &corev1.Secret{}
	testutil.WaitFor(t, env.Client, adminKey, admin, "admin Secret", func(*corev1.Secret) error { return nil })
	if string(admin.Data[database.PasswordKey]) != "set-up-with-this" || string(admin.Data[database.UsernameKey]) != "root" {
		t.Fatalf("admin Secret of an existing cluster does not hold the password it was set up with (keys %v)", keys(admin.Data))
	}
	testutil.Eventually(t, testutil.DefaultTimeout, "an event saying where the admin password came from", func() error {
		events := &eventsv1.EventList{}
		if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if strings.Contains(e.Note, "Created Secret legacy-admin with the superuser password the cluster was set up with") {
				return nil
			}
		}
		return fmt.Errorf("%d events, none about legacy-admin", len(events.Items))
	})
	waitCredentials(t, key, 1, metav1.ConditionTrue, v1beta1.ReasonCredentialsInSync)

	if err := env.Client.Delete(ctx, admin); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "SecretReady=False AdminSecretNotFound", func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionSecretReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta1.ReasonAdminSecretNotFound || !strings.Contains(c.Message, "legacy-admin") {
			return fmt.Errorf("SecretReady %+v", c)
		}
		return nil
	})
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, v1beta1.ReasonAdminSecretNotFound, "legacy")
	testutil.Settle(t)
	if err := env.Client.Get(ctx, adminKey, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("admin Secret made again over data: %v", err)
	}
	assertNotLeaked(t, ns, "set-up-with-this")
}
