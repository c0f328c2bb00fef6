package services

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/models"
)

// The same password in two Unicode forms: "é", "ü" and "ñ" precomposed (NFC, what most
// keyboards send) and as a letter followed by a combining mark (NFD, what macOS file
// names and some input methods send).
const (
	nfcPassword = "cr\u00e8me br\u00fbl\u00e9e ma\u00f1ana"
	nfdPassword = "cre\u0300me bru\u0302le\u0301e man\u0303ana"
)

// legacyHash is a hash of password as the portal made it before passwords were
// normalised: Argon2id of the bytes as typed.
func legacyHash(t *testing.T, password string) string {
	t.Helper()
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		t.Fatal(err)
	}
	key := argon2.IDKey([]byte(password), salt, 2, 19*1024, 1, 32)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, 19*1024, 2, 1,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// TestPasswordsAreComparedInNFC: a password registered in one Unicode form logs in when
// typed in the other (NIST SP 800-63B asks for NFC before hashing); a hash made of the
// raw bytes before that still logs in, once, with what was typed, and is replaced by
// the hash of the normalised form, so that the other form logs in from then on.
func TestPasswordsAreComparedInNFC(t *testing.T) {
	if nfcPassword == nfdPassword {
		t.Fatal("the two forms must differ as bytes")
	}
	ctx := context.Background()
	keys := auth.NewKeyring(fake.NewClientBuilder().Build(), auth.KeyringOptions{Namespace: "p", Name: "keys",
		RotateAfter: time.Hour, Retain: 2 * time.Hour})
	if err := keys.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	iss := auth.NewIssuer(keys, auth.IssuerOptions{Issuer: "i", Audience: "a", AccessTTL: time.Minute, RefreshTTL: time.Hour})
	m := newMemStore()
	s := NewUsers(UsersOptions{Store: m, Issuer: iss, Impersonator: cluster.NewImpersonator(&rest.Config{}, "users")})

	for _, tc := range []struct{ name, registered, typed string }{
		{"nfc-then-nfd", nfcPassword, nfdPassword},
		{"nfd-then-nfc", nfdPassword, nfcPassword},
	} {
		if _, err := s.Register(ctx, models.RegisterRequest{Username: tc.name, Email: tc.name + "@example.com", Password: tc.registered}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Login(ctx, models.LoginRequest{Username: tc.name, Password: tc.typed}); err != nil {
			t.Errorf("%s: registered in one form, typed in the other: want a login, got %v", tc.name, err)
		}
	}

	// An account whose hash predates normalisation, made from NFD bytes.
	if _, err := s.Register(ctx, models.RegisterRequest{Username: "legacy", Email: "legacy@example.com", Password: "a placeholder password"}); err != nil {
		t.Fatal(err)
	}
	old := legacyHash(t, nfdPassword)
	m.hashes["legacy"] = old
	if _, err := s.Login(ctx, models.LoginRequest{Username: "legacy", Password: nfdPassword}); err != nil {
		t.Fatalf("a hash of the raw bytes, typed as registered: want a login, got %v", err)
	}
	if m.hashes["legacy"] == old {
		t.Fatal("want the raw hash replaced by one of the normalised password after the login")
	}
	if _, err := s.Login(ctx, models.LoginRequest{Username: "legacy", Password: nfcPassword}); err != nil {
		t.Fatalf("after the upgrade the NFC form must log in too, got %v", err)
	}
	if _, err := s.Login(ctx, models.LoginRequest{Username: "legacy", Password: "cr\u00e8me br\u00fbl\u00e9e manana"}); err == nil {
		t.Fatal("a different password logged in")
	}
}
