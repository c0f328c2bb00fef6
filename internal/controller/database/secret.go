package database

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

// secretMeta is a metadata-only Secret: Mooring watches Secrets without caching their data.
func secretMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

// ensureSecret makes sure the credentials Secret exists. Mooring generates it only under
// the default name, only when it is missing and only while the cluster has no data (no
// StatefulSet, no data PVC); it never updates or deletes it. A Secret the spec names
// explicitly, or a generated one deleted once there is data, is the user's to provide:
// until it exists the cluster waits.
func (h Handler) ensureSecret(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (bool, error) {
	db := s.Object
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.Spec.SecretName}
	current := secretMeta()
	err := s.Client.Get(ctx, key, current)
	if err == nil {
		if db.Spec.SecretName != v1beta1.CredentialsSecretName(db.Name) {
			missing, err := h.missingKeys(ctx, key, current.ResourceVersion)
			if err != nil {
				return false, err
			}
			if len(missing) > 0 {
				setSecretCondition(s, metav1.ConditionFalse, v1beta1.ReasonSecretKeysMissing, fmt.Sprintf(
					"Secret %s named in spec.secretName has no %s; it needs non-empty keys %q and %q.",
					key.Name, strings.Join(missing, " or "), UsernameKey, PasswordKey))
				return false, nil
			}
		}
		setSecretCondition(s, metav1.ConditionTrue, v1beta1.ReasonSecretFound, fmt.Sprintf("Secret %s holds the credentials.", key.Name))
		return true, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("get Secret %s: %w", key.Name, err)
	}
	h.KeyChecks.forget(key)
	if db.Spec.SecretName != v1beta1.CredentialsSecretName(db.Name) {
		setSecretCondition(s, metav1.ConditionFalse, v1beta1.ReasonSecretNotFound, fmt.Sprintf(
			"Secret %s named in spec.secretName does not exist; create it with keys %q and %q.", key.Name, UsernameKey, PasswordKey))
		return false, nil
	}
	// The Secret is generated only for a cluster without data: the database takes its
	// password when it first initialises its volume, and a new Secret's would not match.
	data, err := existingData(ctx, s)
	if err != nil {
		return false, err
	}
	if data != "" {
		// The cache may lag behind the Secret an earlier reconcile created: ask the API
		// server before reporting it missing.
		err := h.APIReader.Get(ctx, key, secretMeta())
		if err == nil {
			setSecretCondition(s, metav1.ConditionTrue, v1beta1.ReasonSecretFound, fmt.Sprintf("Secret %s holds the credentials.", key.Name))
			return true, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("get Secret %s: %w", key.Name, err)
		}
		setSecretCondition(s, metav1.ConditionFalse, v1beta1.ReasonSecretNotFound, fmt.Sprintf(
			"Secret %s does not exist, but the cluster has data (%s): a newly generated password would not match the one "+
				"the database was initialised with, so Mooring generates none. Re-create the Secret with keys %q and %q "+
				"holding the credentials the data was created with.", key.Name, data, UsernameKey, PasswordKey))
		return false, nil
	}
	password, err := randomPassword()
	if err != nil {
		return false, err
	}
	secret := CredentialsSecret(db, password)
	// No owner reference: the credentials belong with the data, which outlives the
	// cluster under the Retain and Snapshot policies.
	if _, err := s.CreateOnce(ctx, secret, engine.Unowned(),
		engine.Announce(corev1.EventTypeNormal, engine.EventCreated, "Create", fmt.Sprintf("Generated credentials Secret %s", key.Name))); err != nil {
		return false, err
	}
	setSecretCondition(s, metav1.ConditionTrue, v1beta1.ReasonSecretGenerated, fmt.Sprintf("Generated Secret %s with a random password.", key.Name))
	return true, nil
}

// existingData names what holds data of the cluster, "" when nothing does yet: its
// StatefulSet or its data PVCs (which outlive the StatefulSet and, under the Retain and
// Snapshot policies, the cluster). Both are read from the cache.
func existingData(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (string, error) {
	db := s.Object
	var found []string
	err := s.Client.Get(ctx, client.ObjectKeyFromObject(db), &appsv1.StatefulSet{})
	switch {
	case err == nil:
		found = append(found, "StatefulSet "+db.Name)
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("get StatefulSet %s: %w", db.Name, err)
	}
	pvcs, err := dataClaims(ctx, s)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(pvcs))
	for _, pvc := range pvcs {
		names = append(names, pvc.Name)
	}
	if len(names) > 0 {
		sort.Strings(names)
		found = append(found, "PVC "+strings.Join(names, ", "))
	}
	return strings.Join(found, " and "), nil
}

// missingKeys returns the credential keys a user's Secret lacks or holds empty, quoted.
// A database pod would fail on them (CreateContainerConfigError) with nothing on the
// DatabaseCluster to say why. The Secret is read past the cache, which keeps only Secret
// metadata, and only the keys' presence is looked at: no value is kept or logged. Only a
// Secret the user names is read (the one Mooring generates has both keys), and only when
// its resourceVersion (from the metadata cache) is not the one last checked.
func (h Handler) missingKeys(ctx context.Context, key client.ObjectKey, resourceVersion string) ([]string, error) {
	if missing, ok := h.KeyChecks.lookup(key, resourceVersion); ok {
		return missing, nil
	}
	secret := &corev1.Secret{}
	if err := h.APIReader.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("read Secret %s: %w", key.Name, err)
	}
	var missing []string
	for _, k := range []string{UsernameKey, PasswordKey} {
		if len(secret.Data[k]) == 0 {
			missing = append(missing, strconv.Quote(k))
		}
	}
	h.KeyChecks.remember(key, secret.ResourceVersion, missing)
	return missing, nil
}

// KeyChecks remembers, per user-named Secret, which credential keys the version last
// read lacked, so that a reconcile reads the Secret only after it changed rather than
// every time. The zero value is ready to use; a nil *KeyChecks remembers nothing.
type KeyChecks struct {
	mu   sync.Mutex
	seen map[client.ObjectKey]keyCheck
}

type keyCheck struct {
	resourceVersion string
	missing         []string
}

func (k *KeyChecks) lookup(key client.ObjectKey, resourceVersion string) ([]string, bool) {
	if k == nil {
		return nil, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.seen[key]
	return c.missing, ok && c.resourceVersion == resourceVersion
}

func (k *KeyChecks) remember(key client.ObjectKey, resourceVersion string, missing []string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[client.ObjectKey]keyCheck{}
	}
	k.seen[key] = keyCheck{resourceVersion, missing}
}

// forget drops what is remembered of a Secret that no longer exists.
func (k *KeyChecks) forget(key client.ObjectKey) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.seen, key)
}

// setSecretCondition sets SecretReady and, when the Secret just went missing, records one
// Warning event (not one per resync).
func setSecretCondition(s *engine.Scope[*v1beta1.DatabaseCluster], status metav1.ConditionStatus, reason, msg string) {
	if status == metav1.ConditionFalse && !engine.HasCondition(s.Object, v1beta1.ConditionSecretReady, status, reason) {
		s.Event(corev1.EventTypeWarning, reason, "Reconcile", msg)
	}
	engine.SetCondition(s.Object, v1beta1.ConditionSecretReady, status, reason, msg)
}

const passwordAlphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// randomPassword returns 24 characters drawn uniformly from crypto/rand (~140 bits):
// bytes that would favour the first letters of the alphabet are rejected.
func randomPassword() (string, error) {
	const length = 24
	limit := 256 - 256%len(passwordAlphabet)
	out := make([]byte, 0, length)
	buf := make([]byte, 2*length)
	for len(out) < length {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("generate password: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < length {
				out = append(out, passwordAlphabet[int(b)%len(passwordAlphabet)])
			}
		}
	}
	return string(out), nil
}
