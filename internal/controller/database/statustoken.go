package database

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/instance"
)

// The instance managers answer /status only to a bearer token derived from the cluster's
// superuser password (instance.StatusToken): the operator derives it from the Secret
// <name>-admin, the manager from the same Secret mounted as a file. The derivation is
// slow on purpose, so it is done once per version of the Secret.

// statusTokens remembers each cluster's token with the admin Secret's resourceVersion it
// was derived from.
type statusTokens struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]tokenAt
}

type tokenAt struct {
	uid   types.UID
	rv    string
	token string
}

// statusToken is the token of the cluster's admin Secret as it is now: from memory while
// the cache shows the Secret at the version last read, else read past the cache (which
// keeps no Secret data).
func (h Handler) statusToken(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (string, error) {
	db := s.Object
	key := client.ObjectKey{Namespace: db.Namespace, Name: AdminSecretName(db)}
	c := &h.Instances.tokens
	meta := secretMeta()
	if s.Client.Get(ctx, key, meta) == nil {
		c.mu.Lock()
		at, ok := c.seen[client.ObjectKeyFromObject(db)]
		c.mu.Unlock()
		if ok && at.uid == db.UID && at.rv == meta.ResourceVersion {
			return at.token, nil
		}
	}
	secret := &corev1.Secret{}
	if err := h.APIReader.Get(ctx, key, secret); err != nil {
		return "", fmt.Errorf("read Secret %s for the instances' status token: %w", key.Name, err)
	}
	token := instance.StatusToken(string(secret.Data[PasswordKey]))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[types.NamespacedName]tokenAt{}
	}
	c.seen[client.ObjectKeyFromObject(db)] = tokenAt{db.UID, secret.ResourceVersion, token}
	return token, nil
}
