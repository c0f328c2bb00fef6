package sso

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/hydra"
)

// redirectURL is where Hydra sends the browser back; nothing serves it here: the
// tests read the code and state from the URL.
const redirectURL = "http://127.0.0.1:1" + CallbackPath

func newProvider(t *testing.T, h *hydra.Hydra, clientID, secret string) *Provider {
	t.Helper()
	p, err := New(Config{IssuerURL: h.Issuer, ClientID: clientID, ClientSecret: secret, RedirectURL: redirectURL,
		GroupsClaim: "groups", UsernameClaim: "preferred_username", ProviderName: "Test"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

// signIn runs a sign-in of username up to the callback: the flow cookie and the
// callback's query.
func signIn(t *testing.T, h *hydra.Hydra, p *Provider, username string) (string, url.Values) {
	t.Helper()
	authURL, cookie, err := p.Begin(context.Background(), "/ui/ns/team")
	if err != nil {
		t.Fatal(err)
	}
	back, err := url.Parse(h.Authorize(t, browser(t), authURL, username))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(back.String(), redirectURL+"?") {
		t.Fatalf("Hydra sent the browser to %s, want %s", back, redirectURL)
	}
	return cookie, back.Query()
}

// A sign-in through a real provider names the person by issuer and subject, with the
// username and groups of the ID token, and lands where it started; the code it was
// given cannot be used again, and a callback without this browser's flow, or with
// another state, is refused.
func TestSignInThroughHydra(t *testing.T) {
	h := hydra.Start(t, testutil.Integration)
	h.SetUser("dev.one", hydra.User{Subject: "0001", Email: "dev.one@example.com", Groups: []string{"team-b", "team-a"}})
	id, secret := h.Client(t, redirectURL)
	p := newProvider(t, h, id, secret)
	ctx := context.Background()

	cookie, q := signIn(t, h, p, "dev.one")
	who, next, err := p.Finish(ctx, cookie, q)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	want := Identity{Issuer: h.Issuer, Subject: "0001", Username: "dev-one", Email: "dev.one@example.com", Groups: []string{"team-a", "team-b"}}
	if who.Issuer != want.Issuer || who.Subject != want.Subject || who.Username != want.Username || who.Email != want.Email || !slices.Equal(who.Groups, want.Groups) {
		t.Errorf("identity = %+v, want %+v", who, want)
	}
	if next != "/ui/ns/team" {
		t.Errorf("next = %q, want /ui/ns/team", next)
	}

	t.Run("replayed code", func(t *testing.T) {
		_, _, err := p.Finish(ctx, cookie, q)
		wantRefused(t, err, "code was used")
	})
	t.Run("missing flow cookie", func(t *testing.T) {
		cookie, q := signIn(t, h, p, "dev.one")
		_ = cookie
		_, _, err := p.Finish(ctx, "", q)
		wantRefused(t, err, "another browser")
	})
	t.Run("another sign-in's state", func(t *testing.T) {
		cookie, _ := signIn(t, h, p, "dev.one")
		_, q := signIn(t, h, p, "dev.one")
		_, _, err := p.Finish(ctx, cookie, q)
		wantRefused(t, err, "did not match")
	})
	t.Run("provider's error", func(t *testing.T) {
		cookie, q := signIn(t, h, p, "dev.one")
		_, _, err := p.Finish(ctx, cookie, url.Values{"state": {q.Get("state")}, "error": {"access_denied"}, "error_description": {"<b>no</b>"}})
		wantRefused(t, err, "(access_denied): <b>no</b>")
	})
}

// The ID token is checked: one of another provider, one altered after signing, one
// for another client and one of another sign-in (nonce) are all refused.
func TestIDTokenChecks(t *testing.T) {
	h, other := hydra.Start(t, testutil.Integration), hydra.Start(t, testutil.Integration)
	id, secret := h.Client(t, redirectURL)
	p := newProvider(t, h, id, secret)
	ctx := context.Background()
	_, verifier, err := p.discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, nonce := idToken(t, h, p, "dev.two")
	if _, err := p.verify(ctx, verifier, raw, nonce, ""); err != nil {
		t.Fatalf("a good ID token was refused: %v", err)
	}

	oid, osecret := other.Client(t, redirectURL)
	op := newProvider(t, other, oid, osecret)
	foreign, foreignNonce := idToken(t, other, op, "dev.two")

	parts := strings.Split(raw, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	altered := strings.Replace(string(payload), `"dev.two"`, `"admin.x"`, 1)
	if altered == string(payload) {
		t.Fatalf("the ID token's payload does not name dev.two: %s", payload)
	}
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(altered)) + "." + parts[2]

	wrongClient := newProvider(t, h, "another-client", secret)
	_, wrongVerifier, err := wrongClient.discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		raw, nonce string
		p          *Provider
	}{
		"another provider's":    {foreign, foreignNonce, p},
		"altered after signing": {tampered, nonce, p},
		"for another client":    {raw, nonce, wrongClient},
		"of another sign-in":    {raw, "another-nonce", p},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := verifier
			if tc.p == wrongClient {
				v = wrongVerifier
			}
			if who, err := tc.p.verify(ctx, v, tc.raw, tc.nonce, ""); err == nil {
				t.Errorf("accepted, as %+v", who)
			}
		})
	}
}

// idToken signs username in at h for p's client and returns the raw ID token and the
// sign-in's nonce.
func idToken(t *testing.T, h *hydra.Hydra, p *Provider, username string) (string, string) {
	t.Helper()
	cookie, q := signIn(t, h, p, username)
	f, err := p.seal.open(cookie, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	op, _, err := p.discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := p.oauth2(op).Exchange(p.ctx(context.Background()), q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no ID token")
	}
	return raw, f.Nonce
}

func wantRefused(t *testing.T, err error, msg string) {
	t.Helper()
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("error = %v, want an *Error", err)
	}
	if !strings.Contains(se.Message, msg) {
		t.Errorf("message %q does not say %q", se.Message, msg)
	}
}
