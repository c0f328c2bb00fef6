package sso

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// flow is what one sign-in keeps between sending the browser to the provider and its
// return: sealed into a cookie, so no replica needs to remember it.
type flow struct {
	// State ties the callback to this browser's sign-in (CSRF on the redirect).
	State string `json:"s"`
	// Verifier is the PKCE code verifier; only its S256 challenge went to the provider.
	Verifier string `json:"v"`
	// Nonce must come back in the ID token, tying the token to this sign-in.
	Nonce string `json:"n"`
	// Next is the local page to land on afterwards.
	Next string `json:"r,omitempty"`
	// Expires ends the sign-in (Unix seconds), however long the cookie lives.
	Expires int64 `json:"e"`
}

// sealAAD binds sealed flows to their purpose: nothing else the portal seals with a
// key of the same secret opens as a flow.
var sealAAD = []byte("mooring-portal sso flow v1")

// sealer encrypts and authenticates flows (AES-256-GCM) with a key derived from the
// client secret, which every replica shares.
type sealer struct{ aead cipher.AEAD }

func newSealer(secret string) (*sealer, error) {
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, string(sealAAD), 32)
	if err != nil {
		return nil, fmt.Errorf("derive the sign-in cookie key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(f flow) (string, error) {
	plain, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, sealAAD)), nil
}

var errBadFlow = errors.New("sign-in cookie missing, tampered with or expired")

// open returns the flow sealed in v, refusing a forged, altered or expired one.
func (s *sealer) open(v string, now time.Time) (flow, error) {
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return flow{}, errBadFlow
	}
	plain, err := s.aead.Open(nil, raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], sealAAD)
	if err != nil {
		return flow{}, errBadFlow
	}
	var f flow
	if err := json.Unmarshal(plain, &f); err != nil || f.State == "" || f.Verifier == "" || f.Nonce == "" {
		return flow{}, errBadFlow
	}
	if !now.Before(time.Unix(f.Expires, 0)) {
		return flow{}, errBadFlow
	}
	return f, nil
}
