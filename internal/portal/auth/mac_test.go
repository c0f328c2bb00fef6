package auth

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestMACs: a MAC verifies for its purpose and data only, on another replica reading
// the same Secret, and still after the keys rotate, while the key that made it is kept.
func TestMACs(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	c := fake.NewClientBuilder().Build()
	opts := KeyringOptions{Namespace: "p", Name: "keys", RotateAfter: time.Hour, Retain: 2 * time.Hour, Now: func() time.Time { return now }}
	a, b := NewKeyring(c, opts), NewKeyring(c, opts)
	for _, k := range []*Keyring{a, b} {
		if err := k.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mac, err := a.MAC("ui csrf", []byte("session 1"))
	if err != nil {
		t.Fatal(err)
	}
	if !b.VerifyMAC(ctx, "ui csrf", []byte("session 1"), mac) {
		t.Fatal("a MAC of one replica must verify on another")
	}
	if b.VerifyMAC(ctx, "ui csrf", []byte("session 2"), mac) || b.VerifyMAC(ctx, "other", []byte("session 1"), mac) {
		t.Fatal("a MAC verified for other data or another purpose")
	}
	now = now.Add(90 * time.Minute) // past RotateAfter, within Retain
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(a.KeyIDs()); n != 2 {
		t.Fatalf("want two keys after a rotation, got %d", n)
	}
	if newer, _ := a.MAC("ui csrf", []byte("session 1")); string(newer) == string(mac) {
		t.Fatal("after a rotation the newest key makes MACs")
	}
	if !a.VerifyMAC(ctx, "ui csrf", []byte("session 1"), mac) {
		t.Fatal("a MAC of the previous key must verify while that key is kept")
	}
	// b has not read the new key yet; a MAC made with it makes b read the Secret again
	// (b's last read was for the made-up MACs above, UnknownKeyResync ago by b's clock).
	newer, err := a.MAC("ui csrf", []byte("session 3"))
	if err != nil {
		t.Fatal(err)
	}
	if !b.VerifyMAC(ctx, "ui csrf", []byte("session 3"), newer) {
		t.Fatal("a MAC of a key another replica just added must verify after one read of the Secret")
	}
}
