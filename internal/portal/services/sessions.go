package services

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/store"
)

// Refresh tokens rotate (OAuth 2.0 Security BCP, RFC 9700 §4.14.2): every login starts
// a session (a token family) recorded in the User's status with the id of its one
// usable refresh token. A refresh replaces that id; a refresh token of the family that
// is not the current one has been used before, so someone holds a copy: the session
// ends, with every access and refresh token it issued, and the caller gets 401. All
// of it is one status write guarded by the User's resourceVersion, so of two replicas
// refreshing the same token at once exactly one wins; the other reads the User again,
// sees the token already used and ends the session.
//
// A refresh token spent moments ago is not yet a reuse: two browser tabs refreshing at
// once present the same token, and so does a client retrying a refresh whose answer it
// lost. For RefreshReuseInterval after a refresh, the token it spent gets the session's
// current refresh token again (same id, new signature) with a new access token, and the
// session goes on; only the immediately previous token qualifies, and only that long.
// To tell it without storing more, a refresh token's id is derived from the id of the
// token it replaced and the time of the refresh (see successorID).
//
// A session also has an absolute end, its login plus the maximum session lifetime:
// every token of it expires by then at the latest, so a client that keeps refreshing
// must still log in again. A refresh at or after that end answers 401 and ends the
// session (it can only present a token issued before the lifetime was lowered).

// MaxSessions bounds the logins a user holds at once; a login beyond it ends the
// session that would expire first. (The CRD allows 64, leaving room to lower it.)
const MaxSessions = 32

// statusAttempts bounds the read-decide-write rounds of one status change when other
// replicas keep writing the same User.
const statusAttempts = 5

// startSession records a new session for u, clears its failed logins and returns the
// session's first token pair.
func (s *Users) startSession(ctx context.Context, u *portalv1alpha1.User) (models.TokenResponse, error) {
	family := uuid.NewString()
	for range statusAttempts {
		started := metav1Time(s.now())
		sub := subjectOf(u, family)
		sub.NotAfter = s.sessionEnd(started.Time)
		pair, err := s.issuer.Issue(sub)
		if err != nil {
			return models.TokenResponse{}, err
		}
		u.Status.Sessions = withSession(u.Status.Sessions, portalv1alpha1.Session{
			ID: family, Current: pair.RefreshID, ExpiresAt: metav1Time(pair.RefreshExpiresAt), StartedAt: &started}, s.now())
		clearFailures(u, clientOf(ctx))
		err = s.store.UpdateStatus(ctx, u)
		if err == nil {
			return s.response(pair), nil
		}
		if u, err = s.reread(ctx, u, err); err != nil {
			return models.TokenResponse{}, err
		}
	}
	return models.TokenResponse{}, fmt.Errorf("start a session of %s: %w", u.Name, store.ErrConflict)
}

// Refresh trades the current refresh token of a session for a new pair; the old
// refresh token is spent. A spent one ends the session (reuse detection).
func (s *Users) Refresh(ctx context.Context, req models.RefreshRequest) (models.TokenResponse, error) {
	if req.RefreshToken == "" {
		return models.TokenResponse{}, invalid(field("refresh_token", "is required"))
	}
	claims, err := s.issuer.Verify(ctx, req.RefreshToken, auth.TypeRefresh)
	if err != nil {
		return models.TokenResponse{}, errBadToken
	}
	for range statusAttempts {
		u, err := s.holder(ctx, claims)
		if err != nil {
			return models.TokenResponse{}, err
		}
		i := slices.IndexFunc(u.Status.Sessions, func(x portalv1alpha1.Session) bool { return x.ID == claims.Family })
		if i < 0 || !s.now().Before(u.Status.Sessions[i].ExpiresAt.Time) {
			return models.TokenResponse{}, errBadToken // ended, expired or never there
		}
		sess := &u.Status.Sessions[i]
		if sess.StartedAt == nil {
			// Recorded before sessions had a start: the absolute lifetime counts from now.
			sess.StartedAt = new(metav1Time(s.now()))
		}
		sub := subjectOf(u, claims.Family)
		if sub.NotAfter = s.sessionEnd(sess.StartedAt.Time); !sub.NotAfter.IsZero() && !s.now().Before(sub.NotAfter) {
			return models.TokenResponse{}, s.endSession(ctx, u, claims, "Session reached its maximum lifetime; ended it")
		}
		if sess.Current != claims.ID {
			if s.withinReuseInterval(sess.Current, claims.ID) {
				// The current token again, no write: nothing in the session changes.
				sub.RefreshID = sess.Current
				if sub.NotAfter.IsZero() || sess.ExpiresAt.Time.Before(sub.NotAfter) {
					sub.NotAfter = sess.ExpiresAt.Time
				}
				pair, err := s.issuer.Issue(sub)
				if err != nil {
					return models.TokenResponse{}, err
				}
				slog.InfoContext(ctx, "Refresh token presented again within the reuse interval; answered with the current one", "user", u.Name, "session", claims.Family)
				return s.response(pair), nil
			}
			return models.TokenResponse{}, s.endSession(ctx, u, claims, "Refresh token reused; ended its session and every token it issued")
		}
		sub.RefreshID = successorID(claims.ID, s.now())
		pair, err := s.issuer.Issue(sub)
		if err != nil {
			return models.TokenResponse{}, err
		}
		sess.Current, sess.ExpiresAt = pair.RefreshID, metav1Time(pair.RefreshExpiresAt)
		u.Status.Sessions = withoutExpired(u.Status.Sessions, s.now())
		err = s.store.UpdateStatus(ctx, u)
		if err == nil {
			return s.response(pair), nil
		}
		// Another replica wrote the User since it was read: decide again on what it
		// wrote. If it spent this very token, the next round sees the reuse.
		if !errors.Is(err, store.ErrConflict) {
			return models.TokenResponse{}, err
		}
	}
	return models.TokenResponse{}, fmt.Errorf("refresh a session of %s: %w", claims.Username, store.ErrConflict)
}

// endSession ends the session of a refused refresh token, logs why (as a warning, when
// this replica ended it) and answers errBadToken. For a refresh token presented a
// second time, which of the two holders is the rightful one cannot be told, so both
// lose the session; the user's other sessions go on.
func (s *Users) endSession(ctx context.Context, u *portalv1alpha1.User, claims *auth.Claims, why string) error {
	for range statusAttempts {
		n := len(u.Status.Sessions)
		u.Status.Sessions = slices.DeleteFunc(u.Status.Sessions, func(x portalv1alpha1.Session) bool { return x.ID == claims.Family })
		if len(u.Status.Sessions) == n {
			return errBadToken // another replica ended it already
		}
		err := s.store.UpdateStatus(ctx, u)
		if err == nil {
			slog.WarnContext(ctx, why, "user", u.Name, "session", claims.Family)
			return errBadToken
		}
		if u, err = s.reread(ctx, u, err); err != nil {
			return err
		}
	}
	return fmt.Errorf("end session %s of %s: %w", claims.Family, u.Name, store.ErrConflict)
}

// successorID is the id of the refresh token that replaces the one with id prev at
// time at: a digest of prev, then at in milliseconds. It names its predecessor and its
// birth without a stored word more, and the digest keeps it within the 64 characters
// a session's Current may hold however long the chain.
func successorID(prev string, at time.Time) string {
	sum := sha256.Sum256([]byte(prev))
	return base64.RawURLEncoding.EncodeToString(sum[:18]) + "." + strconv.FormatInt(at.UnixMilli(), 36)
}

// withinReuseInterval reports whether current replaced the refresh token prev less
// than the reuse interval ago.
func (s *Users) withinReuseInterval(current, prev string) bool {
	if s.reuseInterval <= 0 {
		return false
	}
	digest, ms, ok := strings.Cut(current, ".")
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(prev))
	if subtle.ConstantTimeCompare([]byte(digest), []byte(base64.RawURLEncoding.EncodeToString(sum[:18]))) != 1 {
		return false
	}
	at, err := strconv.ParseInt(ms, 36, 64)
	if err != nil {
		return false
	}
	return s.now().Sub(time.UnixMilli(at)) < s.reuseInterval
}

// holder returns the user a verified token was issued to, or errBadToken when that
// user is gone, was recreated under the same name, or revoked every token since.
func (s *Users) holder(ctx context.Context, claims *auth.Claims) (*portalv1alpha1.User, error) {
	return s.holderIn(ctx, s.store.Get, claims)
}

// holderIn is holder reading the User with get.
func (s *Users) holderIn(ctx context.Context, get func(context.Context, string) (*portalv1alpha1.User, error), claims *auth.Claims) (*portalv1alpha1.User, error) {
	u, err := get(ctx, claims.Username)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errBadToken
	}
	if err != nil {
		return nil, err
	}
	if u.Spec.ID != claims.Subject || claims.Generation != u.Status.TokenGeneration {
		return nil, errBadToken
	}
	return u, nil
}

// reread returns u as stored now when err is a write conflict, and err otherwise.
func (s *Users) reread(ctx context.Context, u *portalv1alpha1.User, err error) (*portalv1alpha1.User, error) {
	if !errors.Is(err, store.ErrConflict) {
		return nil, err
	}
	fresh, err := s.store.Get(ctx, u.Name)
	if err != nil {
		return nil, err
	}
	if fresh.Spec.ID != u.Spec.ID {
		return nil, fmt.Errorf("user %s was recreated meanwhile: %w", u.Name, store.ErrNotFound)
	}
	return fresh, nil
}

// hasSession reports whether the session named family is live for u at now. An
// expired session may linger in the status until the user's next write; it is over.
func hasSession(u *portalv1alpha1.User, family string, now time.Time) bool {
	return slices.ContainsFunc(u.Status.Sessions, func(x portalv1alpha1.Session) bool {
		return x.ID == family && now.Before(x.ExpiresAt.Time)
	})
}

// sessionEnd is the absolute end of a session that started at started, or the zero
// time when sessions have no maximum lifetime.
func (s *Users) sessionEnd(started time.Time) time.Time {
	if s.maxSession <= 0 {
		return time.Time{}
	}
	return started.Add(s.maxSession)
}

func subjectOf(u *portalv1alpha1.User, family string) auth.Subject {
	return auth.Subject{ID: u.Spec.ID, Username: u.Name, Generation: u.Status.TokenGeneration, Family: family}
}

func (s *Users) response(pair auth.Pair) models.TokenResponse {
	return models.TokenResponse{AccessToken: pair.Access, RefreshToken: pair.Refresh, TokenType: "Bearer",
		ExpiresIn: int64(pair.AccessTTL.Seconds())}
}

// withoutExpired drops the sessions whose refresh token expired by now.
func withoutExpired(ss []portalv1alpha1.Session, now time.Time) []portalv1alpha1.Session {
	return slices.DeleteFunc(ss, func(x portalv1alpha1.Session) bool { return !now.Before(x.ExpiresAt.Time) })
}

// withSession adds sess to the live sessions, ending the ones that would expire first
// when the user holds MaxSessions already.
func withSession(ss []portalv1alpha1.Session, sess portalv1alpha1.Session, now time.Time) []portalv1alpha1.Session {
	ss = withoutExpired(ss, now)
	slices.SortStableFunc(ss, func(a, b portalv1alpha1.Session) int { return a.ExpiresAt.Compare(b.ExpiresAt.Time) })
	if over := len(ss) - (MaxSessions - 1); over > 0 {
		ss = ss[over:]
	}
	return append(ss, sess)
}
