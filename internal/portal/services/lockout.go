package services

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// Lockout is throttled per account and client, as the OWASP Authentication Cheat Sheet
// advises against lockouts an attacker can use to deny the owner service: wrong
// passwords from one client lock the account for that client only (exponentially
// longer, up to a maximum), while a client that has not failed, such as the owner's,
// still logs in. Guessing from many clients at once is bounded by the per-client
// request rate limit; an admin can clear every lock (Unlock).

// maxClientLockouts is how many clients' failure counts a User keeps (the CRD's
// MaxItems); the entry that failed longest ago gives way to a new client.
const maxClientLockouts = 32

type clientKey struct{}

// WithClient returns ctx carrying the address of the request's client (the one the
// portal trusts for rate limits), which failed logins are counted against.
func WithClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientKey{}, addr)
}

// clientOf is the stored key of ctx's client: a hash, so that Users do not keep
// addresses. Without a client (tests, internal calls) every request counts as one.
func clientOf(ctx context.Context) string {
	addr, _ := ctx.Value(clientKey{}).(string)
	sum := sha256.Sum256([]byte("mooring-portal-client:" + addr))
	return hex.EncodeToString(sum[:16])
}

// lockedFor reports whether u is locked for client at now.
func lockedFor(u *portalv1alpha1.User, client string, now time.Time) bool {
	i := slices.IndexFunc(u.Status.ClientLockouts, func(l portalv1alpha1.ClientLockout) bool { return l.Client == client })
	if i < 0 {
		return false
	}
	until := u.Status.ClientLockouts[i].LockedUntil
	return until != nil && now.Before(until.Time)
}

// countFailure records a failed login of client on u at now under policy p.
func (p LockoutPolicy) countFailure(u *portalv1alpha1.User, client string, now time.Time) {
	u.Status.FailedLogins++
	ls := u.Status.ClientLockouts
	i := slices.IndexFunc(ls, func(l portalv1alpha1.ClientLockout) bool { return l.Client == client })
	if i < 0 {
		if len(ls) >= maxClientLockouts {
			oldest := 0
			for j := range ls {
				if ls[j].LastFailure.Before(&ls[oldest].LastFailure) {
					oldest = j
				}
			}
			ls = slices.Delete(ls, oldest, oldest+1)
		}
		ls = append(ls, portalv1alpha1.ClientLockout{Client: client})
		i = len(ls) - 1
	}
	l := &ls[i]
	l.FailedLogins++
	l.LastFailure = metav1.NewTime(now)
	if d := p.lockFor(l.FailedLogins); d > 0 {
		until := metav1.NewTime(now.Add(d))
		l.LockedUntil = &until
	}
	u.Status.ClientLockouts = ls
}

// clearFailures forgets client's failed logins on u after it logged in; the locks of
// other clients stay.
func clearFailures(u *portalv1alpha1.User, client string) {
	u.Status.FailedLogins, u.Status.LockedUntil = 0, nil
	u.Status.ClientLockouts = slices.DeleteFunc(u.Status.ClientLockouts, func(l portalv1alpha1.ClientLockout) bool { return l.Client == client })
}

// Locked reports whether any client is locked out of u at now.
func Locked(u *portalv1alpha1.User, now time.Time) bool {
	for _, l := range u.Status.ClientLockouts {
		if l.LockedUntil != nil && now.Before(l.LockedUntil.Time) {
			return true
		}
	}
	return false
}
