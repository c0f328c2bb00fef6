package sso

import (
	"encoding/base64"
	"testing"
	"time"
)

// A sealed flow opens only unaltered, before it expires, with the key it was sealed
// with.
func TestSeal(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, err := newSealer("a-client-secret-of-some-length")
	if err != nil {
		t.Fatal(err)
	}
	f := flow{State: "st", Verifier: "ver", Nonce: "no", Next: "/ui/", Expires: now.Add(time.Minute).Unix()}
	sealed, err := s.seal(f)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.open(sealed, now); err != nil || got != f {
		t.Fatalf("open = %+v, %v; want %+v", got, err, f)
	}
	if _, err := s.open(sealed, now.Add(time.Minute)); err == nil {
		t.Error("an expired flow opened")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(sealed)
	raw[len(raw)-1] ^= 1
	if _, err := s.open(base64.RawURLEncoding.EncodeToString(raw), now); err == nil {
		t.Error("an altered flow opened")
	}
	other, _ := newSealer("another-client-secret-entirely")
	if _, err := other.open(sealed, now); err == nil {
		t.Error("a flow opened with another key")
	}
}
