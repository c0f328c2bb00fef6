package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters: the first OWASP recommendation for Argon2id (19 MiB of memory,
// 2 iterations, 1 lane). Argon2id rather than bcrypt because it is memory-hard (GPU
// and ASIC guessing pay for the memory too) and has no 72-byte input limit, which
// matters with passwords of up to 128 characters.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024 // KiB
	argonThreads = 1
	argonKeyLen  = 32
	saltLen      = 16
)

// ErrMismatch is returned when a password does not match its hash.
var ErrMismatch = errors.New("password does not match")

// HashPassword returns the password's Argon2id hash in the PHC string format
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash), which carries its own parameters so
// they can be raised later without breaking stored hashes.
func HashPassword(password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("read salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// CheckPassword compares password with a hash made by HashPassword in constant time.
func CheckPassword(hash, password string) error {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return errors.New("unsupported password hash format")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return fmt.Errorf("unsupported argon2 version %q", parts[2])
	}
	var memory, iterations uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &iterations, &threads); err != nil {
		return fmt.Errorf("parse argon2 parameters: %w", err)
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return fmt.Errorf("decode salt: %w", err)
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return fmt.Errorf("decode hash: %w", err)
	}
	got := argon2.IDKey([]byte(password), salt, iterations, memory, threads, uint32(len(want)))
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return ErrMismatch
	}
	return nil
}

// dummyHash is compared against when a login names an unknown user, so that an unknown
// user and a wrong password take the same time.
// It is made on first use, not at start-up, because a hash costs tens of milliseconds.
var dummyHash = sync.OnceValue(func() string {
	h, err := HashPassword("not-a-password-of-anyone")
	if err != nil {
		panic(err) // crypto/rand failing leaves nothing sensible to do
	}
	return h
})

// BurnPasswordCheck spends the time of one password check; see dummyHash.
func BurnPasswordCheck(password string) {
	_ = CheckPassword(dummyHash(), password)
}
