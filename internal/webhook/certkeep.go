package webhook

import (
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Retries of a keeper whose write failed: soon, then less often.
const (
	keepRetryFirst = time.Second
	keepRetryMax   = 30 * time.Second
)

// secretKeeper keeps the webhook certificate Secret while the operator runs: a deleted
// Secret is created again, an emptied or corrupted one filled again, within the time it
// takes its watch event to arrive. The rotator does neither for a deleted Secret (it
// only reads the Secret, and waits for it), and an operator pod then rescheduled would
// never start, the chart mounting the Secret as a required volume.
//
// It puts back the certificates the Secret last held while valid, not new ones: the CA
// in the webhook configurations and the CRD stays the one that signed the serving
// certificate, and so does the certificate each replica serves. A new CA would be
// injected at once, but a replica in a cluster serves the certificate of its mounted
// volume, which the kubelet refreshes only after a minute or more: for that long the API
// server would refuse the serving certificate, and with failurePolicy Fail every
// admission and DatabaseCluster conversion would fail. Only when what it held is no
// longer valid (expired), or it never saw a valid Secret, does it issue new certificates,
// which the rotator then injects as for any new Secret. The Secret's labels and
// annotations come back too (a Helm release's ownership, say).
//
// An emptied or corrupted Secret is also seen by the rotator, which would issue a new CA;
// the keeper usually writes first (the rotator generates two RSA keys before it writes),
// and the rotator's write then fails on the changed resourceVersion (logged once by the
// rotator), after which it reads the refilled Secret and finds it valid. Should the
// rotator write first, its new certificates are valid and kept, and it injects them.
//
// Every replica runs one, as every replica runs the rotator: the first create or update
// wins, the others' fail on AlreadyExists or a conflict and read the winner's.
type secretKeeper struct {
	secrets corev1client.SecretInterface
	key     types.NamespacedName
	// caName and dnsName are the names the CA and the serving certificate must be for.
	caName, dnsName string
	// issue makes a new CA and serving certificate (Secret keys to values).
	issue func() (map[string][]byte, error)
	log   logr.Logger
	// kick wakes the loop; buffered, so a burst of events makes one pass.
	kick chan struct{}
	// held is the last valid Secret seen; nil before the first.
	held *corev1.Secret
	// now is the clock certificates are checked against.
	now func() time.Time
}

// keepSecret adds a secretKeeper for the Secret of o to mgr.
func keepSecret(mgr ctrl.Manager, o CertOptions, caName string, issue func() (map[string][]byte, error)) error {
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("certificate Secret %s: %w", o.Secret, err)
	}
	k := &secretKeeper{
		secrets: cs.CoreV1().Secrets(o.Secret.Namespace), key: o.Secret,
		caName: caName, dnsName: o.DNSName, issue: issue,
		log:  ctrl.Log.WithName("cert-keeper").WithValues("secret", o.Secret),
		kick: make(chan struct{}, 1), now: time.Now,
	}
	lw := toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "secrets", o.Secret.Namespace,
		fields.OneTermEqualSelector("metadata.name", o.Secret.Name))
	_, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.Secret{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { k.wake() },
			UpdateFunc: func(any, any) { k.wake() },
			DeleteFunc: func(any) { k.wake() },
		},
	})
	return mgr.Add(runnableFunc(func(ctx context.Context) error {
		go informer.RunWithContext(ctx)
		k.run(ctx)
		return nil
	}))
}

// wake asks the loop for a pass.
func (k *secretKeeper) wake() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// run makes a pass on every wake-up until ctx ends; a failed pass is retried with a
// growing delay.
func (k *secretKeeper) run(ctx context.Context) {
	delay := keepRetryFirst
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.kick:
		case <-retry:
		}
		retry = nil
		if err := k.sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			k.log.Error(err, "Unable to restore the webhook certificate Secret; retrying", "in", delay)
			retry = time.After(delay)
			delay = min(2*delay, keepRetryMax)
			continue
		}
		delay = keepRetryFirst
	}
}

// sync reads the Secret from the API server and acts on what it finds: it remembers a
// valid one, creates a missing one and fills an invalid one.
func (k *secretKeeper) sync(ctx context.Context) error {
	current, err := k.secrets.Get(ctx, k.key.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		data, how, err := k.restore()
		if err != nil {
			return err
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: k.key.Name, Namespace: k.key.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "mooring"}}, Data: data}
		if k.held != nil {
			secret.Labels, secret.Annotations, secret.Type = maps.Clone(k.held.Labels), maps.Clone(k.held.Annotations), k.held.Type
		}
		_, err = k.secrets.Create(ctx, secret, metav1.CreateOptions{FieldManager: "mooring"})
		if apierrors.IsAlreadyExists(err) {
			return nil // another replica was first; its event brings the next pass
		}
		if err != nil {
			return fmt.Errorf("create the deleted webhook certificate Secret: %w", err)
		}
		k.log.Info("Created the deleted webhook certificate Secret again with " + how)
		return nil
	case err != nil:
		return fmt.Errorf("read the webhook certificate Secret: %w", err)
	case current.DeletionTimestamp != nil:
		return nil // its deletion event brings the next pass
	case k.valid(current.Data):
		k.held = current
		return nil
	}
	data, how, err := k.restore()
	if err != nil {
		return err
	}
	current.Data = data
	_, err = k.secrets.Update(ctx, current, metav1.UpdateOptions{FieldManager: "mooring"})
	if apierrors.IsConflict(err) {
		return nil // written meanwhile (by the rotator, say); its event brings the next pass
	}
	if err != nil {
		return fmt.Errorf("fill the webhook certificate Secret: %w", err)
	}
	k.log.Info("Filled the emptied or corrupted webhook certificate Secret again with " + how)
	return nil
}

// restore returns the certificates to put back, and says which they are.
func (k *secretKeeper) restore() (map[string][]byte, string, error) {
	if k.held != nil && k.valid(k.held.Data) {
		return maps.Clone(k.held.Data), "the certificates it held (the CA injected into the webhooks stays valid)", nil
	}
	data, err := k.issue()
	if err != nil {
		return nil, "", fmt.Errorf("issue a webhook certificate: %w", err)
	}
	return data, "a new CA and serving certificate (it held none that is still valid; the rotator injects the new CA)", nil
}

// valid reports whether data holds a CA with its key and a serving certificate with its
// key that the CA signed for dnsName, all valid now.
func (k *secretKeeper) valid(data map[string][]byte) bool {
	now := k.now()
	ca, err := rotator.ValidCert(data["ca.crt"], data["ca.crt"], data["ca.key"], k.caName, nil, now)
	if err != nil || !ca {
		return false
	}
	serving, err := rotator.ValidCert(data["ca.crt"], data["tls.crt"], data["tls.key"], k.dnsName,
		&[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, now)
	return err == nil && serving
}
