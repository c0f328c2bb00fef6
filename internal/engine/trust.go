package engine

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// trust remembers, per child (by UID), the last state in which this process saw the child
// match what it desired: the desired object's spec hash and the child's content hash then
// (cachetrim.go). A trimmed child whose cached copy still has both is trusted without a
// read. The record is kept in memory only, on purpose: a record on the child could be
// forged or copied with the rest of it, and one Mooring wrote would need a second write
// (the content hash of a write is known only from its response). So after a restart every
// child is read once, whole, before it is trusted again.
type trust struct {
	mu      sync.Mutex
	entries map[types.UID]trustEntry
}

type trustEntry struct{ specHash, content uint64 }

func newTrust() *trust { return &trust{entries: map[types.UID]trustEntry{}} }

// remember records that child, read or written whole, matches the desired object of
// spec hash specHash.
func (t *trust) remember(child client.Object, specHash string) {
	if t == nil {
		return
	}
	want, err := strconv.ParseUint(specHash, 16, 64)
	if err != nil {
		return
	}
	content, err := ContentHash(child)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries[child.GetUID()] = trustEntry{want, content}
}

// holds reports whether cached, a trimmed cached child, is in the state last remembered
// for the desired object of spec hash specHash, with that spec hash on it.
func (t *trust) holds(cached client.Object, specHash string) bool {
	if t == nil || cached.GetAnnotations()[mooringv1.SpecHashAnnotation] != specHash {
		return false
	}
	content, ok := cachedContentHash(cached)
	if !ok {
		return false
	}
	want, err := strconv.ParseUint(specHash, 16, 64)
	if err != nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[cached.GetUID()]
	return ok && e == trustEntry{want, content}
}

// forget drops what is remembered of a deleted child.
func (t *trust) forget(uid types.UID) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, uid)
}
