package database

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	_ "embed" // the script
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dbtls"
	"github.com/mooringhq/mooring/internal/dump"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/jobstatus"
)

// Changing the credentials runs a Job, and a Job superseded by newer credentials is deleted.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete

// CredentialsScript waits until the primary takes the application user's password of the
// credentials Secret, which the instance managers set over their local sockets, logging
// in as that user over verified TLS.
//
//go:embed credentials.sh
var CredentialsScript string

const (
	credentialsJobValue = "credentials"
	// credentialsComponent labels the Job's pods: not "database", so that the cluster's
	// Services do not select them.
	credentialsComponent = "database-credentials"
	// adminHashIterations makes a guess at the superuser password from status cost as
	// much as a PBKDF2 of 100 000 rounds (~20 ms), computed once per Secret version.
	adminHashIterations = 100_000
	credentialsDeadline = int64(10 * 60)
)

// CredentialsJobName is the Job that gives the database the credentials of fingerprint
// hash: one name per distinct credentials.
func CredentialsJobName(db *v1beta1.DatabaseCluster, hash string) string {
	return dump.JobName(db.Name, "credentials-"+hash[:min(8, len(hash))])
}

// CredentialsJob waits until the database has the application user's password of the
// credentials Secret, logging in to the primary as that user over TLS with the server
// verified against the binding's CA. Every credential reaches the pod through
// secretKeyRef; the Job's spec holds none, and it has no superuser password at all.
func CredentialsJob(db *v1beta1.DatabaseCluster, hash string) *batchv1.Job {
	ref := func(secret, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
		}}
	}
	env := []corev1.EnvVar{
		{Name: "DB_ENGINE", Value: string(db.Spec.Engine)},
		{Name: "DB_HOST", Value: fmt.Sprintf("%s.%s.svc", db.Name, db.Namespace)},
		{Name: "DB_PORT", Value: strconv.Itoa(int(Port(db)))},
		{Name: "DB_CA_FILE", Value: jobCADir + "/" + dbtls.CAKey},
		{Name: "APP_USERNAME", ValueFrom: ref(db.Spec.SecretName, UsernameKey)},
		{Name: "APP_PASSWORD", ValueFrom: ref(db.Spec.SecretName, PasswordKey)},
		// The root filesystem is read-only; the clients look for their rc files here.
		{Name: "HOME", Value: "/tmp"},
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        CredentialsJobName(db, hash),
			Labels:      map[string]string{v1beta1.CredentialsJobLabel: credentialsJobValue},
			Annotations: map[string]string{v1beta1.CredentialsHashAnnotation: hash},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](3),
			ActiveDeadlineSeconds: ptr.To(credentialsDeadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: engine.Labels(credentialsComponent, db.Name)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To(dump.RunAsUser),
						RunAsGroup:     ptr.To(dump.RunAsUser),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:         "credentials",
						Image:        dump.ServerImage(db.Spec.Engine, db.Spec.Version),
						Command:      []string{"/bin/sh", "-c", CredentialsScript},
						Env:          env,
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}, jobCAMount()},
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot:             ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, jobCAVolume(db)},
				},
			},
		},
	}
}

// fingerprints identify the credentials in a cluster's two Secrets without being them.
type fingerprints struct {
	// credentials is an HMAC-SHA-256 of the username and password keyed with a PBKDF2 of
	// the superuser password, so that status gives no way to test guesses at a password
	// cheaper than that PBKDF2.
	credentials string
	// admin is derived from a PBKDF2 of the superuser password, salted with the
	// cluster's UID.
	admin string
	// superuser: the credentials name the engine's superuser, whose password is the
	// admin Secret's business.
	superuser bool
}

func fingerprintsOf(db *v1beta1.DatabaseCluster, credentials, admin *corev1.Secret) (fingerprints, error) {
	adminPassword := string(admin.Data[PasswordKey])
	// One slow derivation from the superuser password gives both the admin fingerprint and
	// the key of the credentials' HMAC, each under its own label. Keyed with the password
	// itself, the HMAC would let anyone who can read the cluster's status test guesses
	// at a cheap hash's speed where the superuser password is the application's (a
	// cluster older than its admin Secret); keyed so, every guess costs the PBKDF2.
	seed, err := pbkdf2.Key(sha256.New, adminPassword, []byte("mooring.dev/admin/"+string(db.UID)), adminHashIterations, 32)
	if err != nil {
		return fingerprints{}, err
	}
	adminSum := sha256.Sum256(append([]byte("mooring.dev/admin-fingerprint\x00"), seed...))
	macKey := sha256.Sum256(append([]byte("mooring.dev/credentials-key\x00"), seed...))
	mac := hmac.New(sha256.New, macKey[:])
	username, password := credentials.Data[UsernameKey], credentials.Data[PasswordKey]
	// Lengths first, so that no two (username, password) pairs are the same message.
	fmt.Fprintf(mac, "mooring.dev/credentials\x00%s\x00%d\x00%d\x00", db.UID, len(username), len(password))
	mac.Write(username)
	mac.Write(password)
	return fingerprints{
		credentials: hex.EncodeToString(mac.Sum(nil)[:16]),
		admin:       hex.EncodeToString(adminSum[:16]),
		superuser:   string(username) == adminUser(db.Spec.Engine),
	}, nil
}

// Fingerprints remembers, per cluster, the fingerprints of the versions of its two
// Secrets last read, so that a reconcile reads the Secrets (past the cache, which keeps
// no Secret data) only after one of them changed. The zero value is ready to use; a nil
// *Fingerprints remembers nothing.
type Fingerprints struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]fingerprintsAt
}

type fingerprintsAt struct {
	uid                    types.UID
	credentialsRV, adminRV string
	f                      fingerprints
}

func (c *Fingerprints) lookup(db *v1beta1.DatabaseCluster, credentialsRV, adminRV string) (fingerprints, bool) {
	if c == nil {
		return fingerprints{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.seen[client.ObjectKeyFromObject(db)]
	return at.f, ok && at.uid == db.UID && at.credentialsRV == credentialsRV && at.adminRV == adminRV
}

func (c *Fingerprints) remember(db *v1beta1.DatabaseCluster, credentialsRV, adminRV string, f fingerprints) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[types.NamespacedName]fingerprintsAt{}
	}
	c.seen[client.ObjectKeyFromObject(db)] = fingerprintsAt{db.UID, credentialsRV, adminRV, f}
}

// fingerprints of the cluster's Secrets as they are now: from memory while the cache
// shows both at the versions last read, else read from the API server.
func (h Handler) fingerprints(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (fingerprints, error) {
	db := s.Object
	credentialsKey := client.ObjectKey{Namespace: db.Namespace, Name: db.Spec.SecretName}
	adminKey := client.ObjectKey{Namespace: db.Namespace, Name: AdminSecretName(db)}
	credentialsMeta, adminMeta := secretMeta(), secretMeta()
	if s.Client.Get(ctx, credentialsKey, credentialsMeta) == nil && s.Client.Get(ctx, adminKey, adminMeta) == nil {
		if f, ok := h.Fingerprints.lookup(db, credentialsMeta.ResourceVersion, adminMeta.ResourceVersion); ok {
			return f, nil
		}
	}
	credentials, admin := &corev1.Secret{}, &corev1.Secret{}
	if err := h.APIReader.Get(ctx, credentialsKey, credentials); err != nil {
		return fingerprints{}, fmt.Errorf("read Secret %s: %w", credentialsKey.Name, err)
	}
	if err := h.APIReader.Get(ctx, adminKey, admin); err != nil {
		return fingerprints{}, fmt.Errorf("read Secret %s: %w", adminKey.Name, err)
	}
	f, err := fingerprintsOf(db, credentials, admin)
	if err != nil {
		return fingerprints{}, err
	}
	h.Fingerprints.remember(db, credentials.ResourceVersion, admin.ResourceVersion, f)
	return f, nil
}

// syncCredentials keeps the database's credentials those of the credentials Secret.
// The Bitnami images read the password from the environment only when they initialise
// the data directory, so a password changed in the Secret later is unknown to the
// database until a Job, connected as the superuser, changes it there (as CloudNativePG
// does with ALTER ROLE). status.credentials records fingerprints of what the database
// has; its revision advances only once a Job has succeeded, and bound Apps follow the
// revision, so they roll onto a new password only once the database has it.
//
// Nothing is guessed: a superuser password that changed (Mooring could no longer log in,
// or would log in with a password the database does not have) stops the sync with a
// condition and an event until it is put back.
//
// The checks run in order, and the first that ends the run sets CredentialsSynced: the
// superuser password is the database's; no Job for older credentials runs; the database
// has the Secret's credentials already; they are not the superuser's; a Job gives them
// to the database; its outcome.
func (h Handler) syncCredentials(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], sts *appsv1.StatefulSet) error {
	c := &credentialsSync{h: h, s: s, db: s.Object, sts: sts}
	_, err := engine.RunSteps(ctx, c.read, c.adminPasswordKept, c.staleJobsGone, c.inSync, c.notSuperuser, c.jobStarted, c.jobOutcome)
	return err
}

// credentialsSync is one reconcile's run of the credentials checks, in the order
// syncCredentials lists them; each sets CredentialsSynced when it ends the run.
type credentialsSync struct {
	h   Handler
	s   *engine.Scope[*v1beta1.DatabaseCluster]
	db  *v1beta1.DatabaseCluster
	sts *appsv1.StatefulSet
	// f fingerprints the Secrets' credentials, rec is what status says the database has.
	f   fingerprints
	rec *v1beta1.DatabaseCredentialsStatus
	// jobs are the cluster's credentials Jobs; job the one for f, nil when there is none.
	jobs []batchv1.Job
	job  *batchv1.Job
}

// read fingerprints the Secrets and finds the record and the Jobs to decide on.
func (c *credentialsSync) read(ctx context.Context) (engine.Verdict, error) {
	db := c.db
	f, err := c.h.fingerprints(ctx, c.s)
	if err != nil {
		return engine.Next, err
	}
	jobs, err := credentialsJobs(ctx, c.s)
	if err != nil {
		return engine.Next, err
	}
	rec := db.Status.Credentials
	if rec == nil || rec.Hash != f.credentials || rec.AdminHash != f.admin || len(jobs) > 0 {
		// About to act on a difference: decide on the record as last written. The cache
		// may not have this controller's last status write yet (the Job deleted after a
		// success brings the next reconcile at once), and a stale record would start the
		// Job again and count the revision back.
		if rec, err = c.h.writtenCredentials(ctx, db); err != nil {
			return engine.Next, err
		}
		db.Status.Credentials = rec
	}
	if rec == nil {
		// First sight: the database is set up (or about to be, or was, before Mooring
		// recorded it) from these Secrets.
		rec = &v1beta1.DatabaseCredentialsStatus{Revision: 1, Hash: f.credentials, AdminHash: f.admin}
		db.Status.Credentials = rec
	}
	if rec.AdminHash == "" {
		// Removed by hand: the Secret's superuser password is the database's now.
		rec.AdminHash = f.admin
	}
	c.f, c.rec, c.jobs = f, rec, jobs
	for i := range jobs {
		if jobs[i].Annotations[v1beta1.CredentialsHashAnnotation] == f.credentials {
			c.job = &jobs[i]
		}
	}
	return engine.Next, nil
}

// adminPasswordKept stops the sync while the superuser password is not the database's.
func (c *credentialsSync) adminPasswordKept(context.Context) (engine.Verdict, error) {
	if c.rec.AdminHash == c.f.admin {
		return engine.Next, nil
	}
	setCredentialsCondition(c.s, metav1.ConditionFalse, v1beta1.ReasonAdminPasswordChanged, fmt.Sprintf(
		"The superuser password in Secret %s is not the one the database was set up with: Mooring cannot change "+
			"the database's credentials, and does not try the new password. Put the previous password back; if the "+
			"database has the new one (you changed it yourself), remove status.credentials.adminHash.", AdminSecretName(c.db)))
	return engine.Wait(0), nil
}

// staleJobsGone stops the Jobs for credentials the Secret no longer holds, and waits
// until they are gone.
func (c *credentialsSync) staleJobsGone(ctx context.Context) (engine.Verdict, error) {
	var stale []string
	for i := range c.jobs {
		j := &c.jobs[i]
		if j == c.job {
			continue
		}
		// A Job for credentials the Secret no longer holds may have changed the database
		// before it is stopped: once it is gone, what the database has is unknown, and
		// the Secret's credentials are applied again.
		stale = append(stale, j.Name)
		c.rec.Hash = ""
		// Foreground: the Job goes only once its pod has, so no older password can land
		// after the next Job's newer one.
		if err := c.s.DeleteExact(ctx, j, metav1.DeletePropagationForeground); err != nil {
			return engine.Next, err
		}
	}
	if len(stale) == 0 {
		return engine.Next, nil
	}
	setCredentialsCondition(c.s, metav1.ConditionFalse, v1beta1.ReasonCredentialsSyncing, fmt.Sprintf(
		"Stopping Job %v, which was changing the credentials to an earlier version of Secret %s; the current ones "+
			"follow once it is gone.", stale, c.db.Spec.SecretName))
	return engine.Wait(0), nil
}

// inSync ends the flow when the database has the Secret's credentials.
func (c *credentialsSync) inSync(ctx context.Context) (engine.Verdict, error) {
	if c.rec.Hash != c.f.credentials {
		return engine.Next, nil
	}
	if c.job != nil {
		// Succeeded and recorded, but its deletion did not get through.
		if err := c.s.Delete(ctx, c.job); err != nil {
			return engine.Next, err
		}
	}
	setCredentialsCondition(c.s, metav1.ConditionTrue, v1beta1.ReasonCredentialsInSync, inSyncMessage(c.db))
	return engine.Done(), nil
}

// notSuperuser refuses to change the superuser's password, which is the admin Secret's.
func (c *credentialsSync) notSuperuser(context.Context) (engine.Verdict, error) {
	if !c.f.superuser {
		return engine.Next, nil
	}
	setCredentialsCondition(c.s, metav1.ConditionFalse, v1beta1.ReasonSuperuserCredentials, fmt.Sprintf(
		"Secret %s names the superuser %s, whose password Mooring does not change; the database keeps its "+
			"credentials and bound Apps do not roll. Use another user in that Secret.", c.db.Spec.SecretName, adminUser(c.db.Spec.Engine)))
	return engine.Wait(0), nil
}

// jobStarted starts the Job for the Secret's credentials once the primary is ready.
func (c *credentialsSync) jobStarted(ctx context.Context) (engine.Verdict, error) {
	if c.job != nil {
		return engine.Next, nil
	}
	db := c.db
	if c.sts == nil || c.sts.Status.ReadyReplicas == 0 {
		setCredentialsCondition(c.s, metav1.ConditionFalse, v1beta1.ReasonWaitingForPrimary, fmt.Sprintf(
			"The credentials in Secret %s changed; they are given to the database once its primary is ready. Bound "+
				"Apps keep revision %d until then.", db.Spec.SecretName, c.rec.Revision))
		return engine.Wait(0), nil
	}
	job := CredentialsJob(db, c.f.credentials)
	msg := fmt.Sprintf("The credentials in Secret %s changed; Job %s gives them to the database. Bound Apps keep "+
		"revision %d until it has.", db.Spec.SecretName, job.Name, c.rec.Revision)
	if _, err := c.s.CreateOnce(ctx, job, engine.Announce(corev1.EventTypeNormal, v1beta1.ReasonCredentialsSyncing, "SyncCredentials", msg)); err != nil {
		return engine.Next, err
	}
	setCredentialsCondition(c.s, metav1.ConditionFalse, v1beta1.ReasonCredentialsSyncing, msg)
	return engine.Wait(0), nil
}

// jobOutcome records the Job's success (a new revision, which bound Apps roll onto) or
// reports its failure or progress.
func (c *credentialsSync) jobOutcome(ctx context.Context) (engine.Verdict, error) {
	db, job, rec := c.db, c.job, c.rec
	switch st := engine.JobPhase(job); st.Phase {
	case jobstatus.Succeeded:
		rec.Revision++
		rec.Hash = job.Annotations[v1beta1.CredentialsHashAnnotation]
		c.s.Event(corev1.EventTypeNormal, v1beta1.ReasonCredentialsInSync, "SyncCredentials", fmt.Sprintf(
			"Job %s gave the database the credentials of Secret %s: revision %d, which bound Apps roll onto.",
			job.Name, db.Spec.SecretName, rec.Revision))
		setCredentialsCondition(c.s, metav1.ConditionTrue, v1beta1.ReasonCredentialsInSync, inSyncMessage(db))
		return engine.Done(), c.s.Delete(ctx, job)
	case jobstatus.Failed:
		setCredentialsCondition(c.s, metav1.ConditionFalse, v1beta1.ReasonCredentialsSyncFailed, fmt.Sprintf(
			"Job %s could not give the database the credentials of Secret %s (%s); `kubectl logs job/%s` says why. "+
				"The database keeps its credentials and bound Apps stay on revision %d. Fix the cause and delete the Job "+
				"to try again.", job.Name, db.Spec.SecretName, st.Failure(), job.Name, rec.Revision))
	default:
		setCredentialsCondition(c.s, metav1.ConditionFalse, v1beta1.ReasonCredentialsSyncing, fmt.Sprintf(
			"Job %s is giving the database the credentials of Secret %s. Bound Apps keep revision %d until it has.",
			job.Name, db.Spec.SecretName, rec.Revision))
	}
	return engine.Wait(0), nil
}

func inSyncMessage(db *v1beta1.DatabaseCluster) string {
	return fmt.Sprintf("The database has the credentials of Secret %s (revision %d).", db.Spec.SecretName, db.Status.Credentials.Revision)
}

// writtenCredentials reads status.credentials from the API server rather than the cache.
func (h Handler) writtenCredentials(ctx context.Context, db *v1beta1.DatabaseCluster) (*v1beta1.DatabaseCredentialsStatus, error) {
	live := &v1beta1.DatabaseCluster{}
	if err := h.APIReader.Get(ctx, client.ObjectKeyFromObject(db), live); err != nil {
		return nil, fmt.Errorf("read DatabaseCluster %s: %w", db.Name, err)
	}
	if live.UID != db.UID {
		return nil, fmt.Errorf("DatabaseCluster %s was replaced while it was reconciled", db.Name)
	}
	return live.Status.Credentials, nil
}

// credentialsJobs lists the cluster's credentials Jobs from the cache.
func credentialsJobs(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) ([]batchv1.Job, error) {
	list := &batchv1.JobList{}
	labels := engine.Labels(Component, s.Object.Name)
	labels[v1beta1.CredentialsJobLabel] = credentialsJobValue
	if err := s.Client.List(ctx, list, client.InNamespace(s.Object.Namespace), client.MatchingLabels(labels)); err != nil {
		return nil, fmt.Errorf("list Jobs: %w", err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if metav1.IsControlledBy(&j, s.Object) {
			out = append(out, j)
		}
	}
	return out, nil
}

// setCredentialsCondition sets CredentialsSynced and records one Warning event when it
// turns False for a reason that needs the user (not on every resync).
func setCredentialsCondition(s *engine.Scope[*v1beta1.DatabaseCluster], status metav1.ConditionStatus, reason, msg string) {
	warn := reason == v1beta1.ReasonAdminPasswordChanged || reason == v1beta1.ReasonCredentialsSyncFailed || reason == v1beta1.ReasonSuperuserCredentials
	if warn && !engine.HasCondition(s.Object, v1beta1.ConditionCredentialsSynced, status, reason) {
		s.Event(corev1.EventTypeWarning, reason, "SyncCredentials", msg)
	}
	engine.SetCondition(s.Object, v1beta1.ConditionCredentialsSynced, status, reason, msg)
}
