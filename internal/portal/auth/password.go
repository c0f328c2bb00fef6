package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/argon2"
	"golang.org/x/text/unicode/norm"
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

// MaxConcurrentHashes bounds the Argon2id computations running at once in a process.
// Each holds argonMemory (19 MiB) while it runs, so without a bound 20 logins arriving
// together take about 384 MiB and overrun a 256 MiB container; four take 76 MiB. The
// others queue for a slot, which costs them latency, not memory.
const MaxConcurrentHashes = 4

// hashSlots is the semaphore of MaxConcurrentHashes.
var hashSlots = make(chan struct{}, MaxConcurrentHashes)

// idKey is argon2.IDKey; tests replace it to watch how many run at once.
var idKey = argon2.IDKey

// hashWaiters counts the callers queued for a slot, for tests.
var hashWaiters atomic.Int32

// deriveKey runs Argon2id in one of the MaxConcurrentHashes slots, waiting for one
// while ctx lasts.
func deriveKey(ctx context.Context, password, salt []byte, iterations, memory uint32, threads uint8, keyLen uint32) ([]byte, error) {
	select {
	case hashSlots <- struct{}{}:
	default:
		hashWaiters.Add(1)
		select {
		case hashSlots <- struct{}{}:
			hashWaiters.Add(-1)
		case <-ctx.Done():
			hashWaiters.Add(-1)
			return nil, fmt.Errorf("wait to hash a password: %w", ctx.Err())
		}
	}
	defer func() { <-hashSlots }()
	return idKey(password, salt, iterations, memory, threads, keyLen), nil
}

// ErrMismatch is returned when a password does not match its hash.
var ErrMismatch = errors.New("password does not match")

// NormalizePassword is the form of a password that is hashed and compared: Unicode
// NFC, as NIST SP 800-63B (5.1.1.2) asks, so that "é" typed as one code point or as
// "e" and a combining accent (keyboards and operating systems differ) is one password.
func NormalizePassword(password string) string { return norm.NFC.String(password) }

// HashPassword returns the Argon2id hash of the password's normal form
// (NormalizePassword) in the PHC string format ($argon2id$v=19$m=...,t=...,p=...$salt$hash),
// which carries its own parameters so they can be raised later without breaking
// stored hashes. It waits for a hashing slot (MaxConcurrentHashes) while ctx lasts.
func HashPassword(ctx context.Context, password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("read salt: %w", err)
	}
	key, err := deriveKey(ctx, []byte(NormalizePassword(password)), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// CheckPassword compares password with a hash made by HashPassword in constant time:
// its normal form first, then, for a password that is not in normal form, the bytes
// as typed, which is how hashes were made before passwords were normalised. stale
// says that the second matched: the caller should store HashPassword(password) in
// place of hash. Either way the work depends only on the password given, not on the
// hash, so an unknown user (BurnPasswordCheck) costs the same. It waits for a hashing
// slot (MaxConcurrentHashes) while ctx lasts.
func CheckPassword(ctx context.Context, hash, password string) (stale bool, err error) {
	normal := NormalizePassword(password)
	err = checkPassword(ctx, hash, normal)
	if !errors.Is(err, ErrMismatch) || normal == password {
		return false, err
	}
	if err := checkPassword(ctx, hash, password); err != nil {
		return false, err
	}
	return true, nil
}

// checkPassword compares password, as it is, with hash.
func checkPassword(ctx context.Context, hash, password string) error {
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
	got, err := deriveKey(ctx, []byte(password), salt, iterations, memory, threads, uint32(len(want)))
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return ErrMismatch
	}
	return nil
}

// dummyHash is compared against when a login names an unknown user, so that an unknown
// user and a wrong password take the same time.
// It is made on first use, not at start-up, because a hash costs tens of milliseconds.
var dummyHash = sync.OnceValue(func() string {
	h, err := HashPassword(context.Background(), "not-a-password-of-anyone")
	if err != nil {
		panic(err) // crypto/rand failing leaves nothing sensible to do
	}
	return h
})

// BurnPasswordCheck spends the time of one password check; see dummyHash.
func BurnPasswordCheck(ctx context.Context, password string) {
	_, _ = CheckPassword(ctx, dummyHash(), password)
}
