package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KeyringOptions configure a Keyring.
type KeyringOptions struct {
	// Namespace and Name locate the Secret that holds the signing keys.
	Namespace, Name string
	// RotateAfter is how old the newest key may get before a replica adds a new one.
	RotateAfter time.Duration
	// Retain is how long a key is kept after a newer one took over: at least the
	// lifetime of the longest-lived token, so that rotation logs nobody out.
	Retain time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Keyring holds the Ed25519 keys that sign and verify tokens. The keys live in one
// Secret that every replica reads, so a token issued by one replica verifies on all.
// The newest key signs; older keys still verify until they are older than Retain.
type Keyring struct {
	c    client.Client
	opts KeyringOptions

	mu      sync.RWMutex
	keys    map[string]ed25519.PrivateKey
	current string
	loaded  time.Time

	// resyncMu makes the reads an unknown key id causes take turns; lastResync, which
	// it guards, is when the last one started.
	resyncMu   sync.Mutex
	lastResync time.Time
}

// UnknownKeyResync is how often at most a token naming an unknown key makes the
// Keyring read the Secret again: often enough that a key another replica just added
// verifies within seconds, seldom enough that forged key ids cost the API server
// nothing, however many requests carry them at once.
const UnknownKeyResync = 5 * time.Second

// NewKeyring returns a Keyring over the Secret o.Namespace/o.Name; call Sync before use.
func NewKeyring(c client.Client, o KeyringOptions) *Keyring {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Keyring{c: c, opts: o}
}

// keyID names a key after its creation time, so ids sort by age and a replica can tell
// when the newest key is due for rotation. Secret keys allow [-._a-zA-Z0-9].
func keyID(now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("k%d-%s", now.Unix(), hex.EncodeToString(b))
}

func keyTime(id string) time.Time {
	s, _, _ := strings.Cut(strings.TrimPrefix(id, "k"), "-")
	sec, _ := strconv.ParseInt(s, 10, 64)
	return time.Unix(sec, 0)
}

func newKey() ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	return priv.Seed(), nil
}

// Sync reads the Secret, creating it with a first key when missing, adds a new key when
// the newest is older than RotateAfter and drops keys no token can still need. Replicas
// race safely: writes carry the resourceVersion they read, and a loser just reads again.
func (k *Keyring) Sync(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		err := k.syncOnce(ctx)
		if err == nil || attempt == 4 || (!apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err)) {
			return err
		}
	}
}

func (k *Keyring) syncOnce(ctx context.Context) error {
	now := k.opts.Now()
	s := &corev1.Secret{}
	err := k.c.Get(ctx, client.ObjectKey{Namespace: k.opts.Namespace, Name: k.opts.Name}, s)
	if apierrors.IsNotFound(err) {
		seed, err := newKey()
		if err != nil {
			return err
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: k.opts.Namespace, Name: k.opts.Name,
				Labels: map[string]string{"app.kubernetes.io/name": "mooring-portal"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{keyID(now): seed},
		}
		if err := k.c.Create(ctx, s); err != nil {
			return fmt.Errorf("create signing key Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		slog.InfoContext(ctx, "Created signing key Secret", "secret", s.Namespace+"/"+s.Name)
	} else if err != nil {
		return fmt.Errorf("read signing key Secret %s/%s: %w", k.opts.Namespace, k.opts.Name, err)
	}

	ids := sortedIDs(s.Data)
	changed := false
	if len(ids) == 0 || now.Sub(keyTime(ids[len(ids)-1])) >= k.opts.RotateAfter {
		seed, err := newKey()
		if err != nil {
			return err
		}
		id := keyID(now)
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[id] = seed
		ids = append(ids, id)
		changed = true
	}
	// A key may go once the key after it has been signing for longer than Retain: every
	// token it signed has expired by then.
	for i := 0; i < len(ids)-1; i++ {
		if now.Sub(keyTime(ids[i+1])) > k.opts.Retain {
			delete(s.Data, ids[i])
			changed = true
		}
	}
	if changed {
		if err := k.c.Update(ctx, s); err != nil {
			return fmt.Errorf("rotate signing keys in Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		slog.InfoContext(ctx, "Rotated signing keys", "secret", s.Namespace+"/"+s.Name, "keys", len(s.Data))
	}
	return k.load(s.Data)
}

func sortedIDs(data map[string][]byte) []string {
	ids := make([]string, 0, len(data))
	for id := range data {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		ti, tj := keyTime(ids[i]), keyTime(ids[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return ids[i] < ids[j]
	})
	return ids
}

func (k *Keyring) load(data map[string][]byte) error {
	keys := make(map[string]ed25519.PrivateKey, len(data))
	for id, seed := range data {
		if len(seed) != ed25519.SeedSize {
			return fmt.Errorf("signing key %q: want a %d-byte Ed25519 seed, got %d bytes", id, ed25519.SeedSize, len(seed))
		}
		keys[id] = ed25519.NewKeyFromSeed(seed)
	}
	ids := sortedIDs(data)
	if len(ids) == 0 {
		return errors.New("no signing keys")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys, k.current, k.loaded = keys, ids[len(ids)-1], k.opts.Now()
	return nil
}

// Run syncs the keys every interval until ctx ends, so replicas pick up new keys.
func (k *Keyring) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := k.Sync(ctx); err != nil {
				slog.ErrorContext(ctx, "Syncing signing keys failed", "err", err)
			}
		}
	}
}

// signing returns the id and key that sign new tokens.
func (k *Keyring) signing() (string, ed25519.PrivateKey, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.current == "" {
		return "", nil, errors.New("signing keys not loaded")
	}
	return k.current, k.keys[k.current], nil
}

// verifying returns the public key with id kid. A key another replica just added is
// not known yet: then the Secret is read once more, by one request at a time and at
// most once per UnknownKeyResync, so garbage kids cannot make the portal hammer the API
// server. Requests arriving during a read wait for it and use what it loaded.
func (k *Keyring) verifying(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	key, ok := k.lookup(kid)
	if !ok {
		k.resync(ctx)
		key, ok = k.lookup(kid)
	}
	if !ok {
		return nil, fmt.Errorf("unknown signing key %q", kid)
	}
	return key.Public().(ed25519.PublicKey), nil
}

func (k *Keyring) lookup(kid string) (ed25519.PrivateKey, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	key, ok := k.keys[kid]
	return key, ok
}

// resync reads the Secret again unless a read started less than UnknownKeyResync ago.
func (k *Keyring) resync(ctx context.Context) {
	k.resyncMu.Lock()
	defer k.resyncMu.Unlock()
	now := k.opts.Now()
	if !k.lastResync.IsZero() && now.Sub(k.lastResync) < UnknownKeyResync {
		return
	}
	k.lastResync = now
	if err := k.Sync(ctx); err != nil {
		slog.ErrorContext(ctx, "Syncing signing keys for an unknown key id failed", "err", err)
	}
}

// KeyIDs lists the ids of the loaded keys, oldest first.
func (k *Keyring) KeyIDs() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	ids := make([]string, 0, len(k.keys))
	for id := range k.keys {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		return keyTime(ids[i]).Before(keyTime(ids[j])) || (keyTime(ids[i]).Equal(keyTime(ids[j])) && ids[i] < ids[j])
	})
	return ids
}
