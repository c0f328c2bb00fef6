package auth

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
)

// MACs made with the signing keys. The keys are in the Secret every replica reads, so a
// MAC one replica made verifies on all, and a key lasts as long as the tokens it signs.
// Each purpose gets a key of its own, derived with HKDF (RFC 5869) from the signing
// key's seed, so a MAC can never stand in for a signature or for a MAC of another
// purpose.

// MAC returns HMAC-SHA256 of data under the newest signing key's key for purpose.
func (k *Keyring) MAC(purpose string, data []byte) ([]byte, error) {
	_, key, err := k.signing()
	if err != nil {
		return nil, err
	}
	return macWith(key.Seed(), purpose, data)
}

// VerifyMAC reports whether mac is MAC(purpose, data) under any loaded key, compared in
// constant time, so a MAC made just before a rotation still verifies. A MAC of a key
// another replica has just added is not known yet: then the Secret is read again, as
// for a token of an unknown key (at most once per UnknownKeyResync, so made-up MACs
// cost the API server nothing), and the MAC checked once more.
func (k *Keyring) VerifyMAC(ctx context.Context, purpose string, data, mac []byte) bool {
	if k.verifyMAC(purpose, data, mac) {
		return true
	}
	k.resync(ctx)
	return k.verifyMAC(purpose, data, mac)
}

func (k *Keyring) verifyMAC(purpose string, data, mac []byte) bool {
	k.mu.RLock()
	seeds := make([][]byte, 0, len(k.keys))
	for _, key := range k.keys {
		seeds = append(seeds, key.Seed())
	}
	k.mu.RUnlock()
	ok := false
	for _, seed := range seeds {
		want, err := macWith(seed, purpose, data)
		if err == nil && hmac.Equal(want, mac) {
			ok = true
		}
	}
	return ok
}

func macWith(seed []byte, purpose string, data []byte) ([]byte, error) {
	if purpose == "" {
		return nil, errors.New("a MAC needs a purpose")
	}
	key, err := hkdf.Key(sha256.New, seed, nil, "mooring-portal mac: "+purpose, sha256.Size)
	if err != nil {
		return nil, err
	}
	h := hmac.New(sha256.New, key)
	h.Write(data)
	return h.Sum(nil), nil
}
