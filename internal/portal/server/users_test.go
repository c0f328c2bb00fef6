package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/portal/store"
	"github.com/mooringhq/mooring/internal/testutil"
)

func TestRegisterLoginMe(t *testing.T) {
	p := newPortal(t, nil)
	u, pw := p.Register("alice")
	if u.Role != "none" || len(u.Namespaces) != 0 || u.ID == "" {
		t.Fatalf("a new user must have no role and no namespaces, got %+v", u)
	}
	// Usernames are case-insensitive and unique.
	r := p.Do("POST", "/api/v1/users", "", models.RegisterRequest{Username: strings.ToUpper(u.Username), Email: "x@example.com", Password: pw})
	portaltest.Expect(t, r, http.StatusConflict, "register the same name in upper case")

	// The hash is in a Secret of the portal's namespace, nowhere in the User.
	ctx := context.Background()
	obj := &portalv1alpha1.User{}
	if err := admin.Get(ctx, client.ObjectKey{Name: u.Username}, obj); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: devenv.PortalNamespace, Name: store.SecretName(u.ID)}, sec); err != nil {
		t.Fatalf("password Secret: %v", err)
	}
	hash := string(sec.Data["hash"])
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("want an Argon2id hash with OWASP parameters, got %.30q", hash)
	}

	tok := p.Login(strings.ToUpper(u.Username), pw)
	if tok.TokenType != "Bearer" || tok.ExpiresIn != 60 {
		t.Fatalf("want a Bearer token expiring in 60s, got %+v", tok)
	}
	r = p.Do("GET", "/api/v1/users/me", tok.AccessToken, nil)
	portaltest.Expect(t, r, http.StatusOK, "me")
	var me models.User
	r.Decode(t, &me)
	if me.ID != u.ID {
		t.Fatalf("me: want id %s, got %s", u.ID, me.ID)
	}
	for _, body := range []string{string(r.Body), logs.String()} {
		if strings.Contains(body, hash) || strings.Contains(body, pw) {
			t.Fatal("a password or its hash appeared in a response or log line")
		}
	}

	// Unknown user and wrong password: one error, and the unknown user costs a hash
	// check too (an unknown user answered in microseconds would give names away).
	wrong := p.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: u.Username, Password: "wrong password!"})
	t0 := time.Now()
	unknown := p.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: "nobody-" + u.Username, Password: "wrong password!"})
	unknownTook := time.Since(t0)
	portaltest.Expect(t, wrong, http.StatusUnauthorized, "wrong password")
	portaltest.Expect(t, unknown, http.StatusUnauthorized, "unknown user")
	if a, b := wrong.Error(t), unknown.Error(t); a.Message != b.Message || a.Code != b.Code {
		t.Fatalf("unknown user and wrong password must get the same error, got %+v and %+v", a, b)
	}
	if unknownTook < 5*time.Millisecond {
		t.Fatalf("a login of an unknown user took %s: no password check was spent on it", unknownTook)
	}
}

func TestInputValidation(t *testing.T) {
	p := newPortal(t, nil)
	tests := map[string]struct {
		body       string
		wantStatus int
		wantField  string
	}{
		"short password":    {`{"username":"bob-valid","email":"bob@example.com","password":"short"}`, 422, "password"},
		"bad username":      {`{"username":"Bob_X","email":"bob@example.com","password":"long enough password"}`, 422, "username"},
		"bad email":         {`{"username":"bob-valid","email":"not-an-email","password":"long enough password"}`, 422, "email"},
		"unknown field":     {`{"username":"bob-valid","email":"bob@example.com","password":"long enough password","admin":true}`, 400, "admin"},
		"wrong type":        {`{"username":7,"email":"bob@example.com","password":"long enough password"}`, 400, "username"},
		"malformed":         {`{"username":`, 400, ""},
		"password too long": {`{"username":"bob-valid","email":"bob@example.com","password":"` + strings.Repeat("p", 129) + `"}`, 422, "password"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := p.Do("POST", "/api/v1/users", "", tc.body)
			portaltest.Expect(t, r, tc.wantStatus, name)
			e := r.Error(t)
			if tc.wantField != "" && (len(e.Fields) == 0 || e.Fields[0].Field != tc.wantField) {
				t.Fatalf("want an error naming field %q, got %+v", tc.wantField, e)
			}
		})
	}
	// Over 1 MiB: 413.
	big := `{"username":"` + strings.Repeat("a", 1<<20) + `"}`
	portaltest.Expect(t, p.Do("POST", "/api/v1/users", "", big), http.StatusRequestEntityTooLarge, "a body over 1 MiB")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", "", nil), http.StatusUnauthorized, "no token")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", "garbage", nil), http.StatusUnauthorized, "a garbage token")
}

func TestLockoutIsSharedAndExpires(t *testing.T) {
	a := newPortal(t, nil)
	b := newPortal(t, nil) // a second replica
	u, pw := a.Register("locky")
	for i := range 3 {
		r := a.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: u.Username, Password: "not the password"})
		portaltest.Expect(t, r, http.StatusUnauthorized, "wrong password")
		// Failures are counted after the answer; wait for each so the count is exact.
		testutil.Eventually(t, 10*time.Second, "failed login counted", func() error {
			obj := &portalv1alpha1.User{}
			if err := admin.Get(context.Background(), client.ObjectKey{Name: u.Username}, obj); err != nil {
				return err
			}
			if obj.Status.FailedLogins != int32(i+1) {
				return errorf("failedLogins %d, want %d", obj.Status.FailedLogins, i+1)
			}
			return nil
		})
	}
	// Locked: the right password is refused on the other replica too, with the same error.
	r := b.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: u.Username, Password: pw})
	portaltest.Expect(t, r, http.StatusUnauthorized, "the right password while locked, on another replica")
	if e := r.Error(t); e.Message != "invalid username or password" {
		t.Fatalf("a locked account must get the generic error, got %+v", e)
	}
	// The lock ends (3s here) and a good login resets the count.
	testutil.Eventually(t, 20*time.Second, "the lock to end", func() error {
		r := b.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: u.Username, Password: pw})
		if r.Status != http.StatusOK {
			return errorf("login: %d %s", r.Status, r.Body)
		}
		return nil
	})
}

func TestTokensRefreshRevokeAndExpire(t *testing.T) {
	p := newPortal(t, func(c *Config) { c.AccessTTL = 2 * time.Second })
	replica := newPortal(t, nil)
	u, pw := p.Register("tok")
	tok := p.Login(u.Username, pw)
	portaltest.Expect(t, replica.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusOK, "a token of one replica on another")

	// Access tokens expire; the refresh token gets a new pair.
	testutil.Eventually(t, 15*time.Second, "the access token to expire", func() error {
		if r := p.Do("GET", "/api/v1/users/me", tok.AccessToken, nil); r.Status != http.StatusUnauthorized {
			return errorf("still %d", r.Status)
		}
		return nil
	})
	r := p.Do("POST", "/api/v1/token/refresh", "", models.RefreshRequest{RefreshToken: tok.RefreshToken})
	portaltest.Expect(t, r, http.StatusOK, "refresh")
	var fresh models.TokenResponse
	r.Decode(t, &fresh)
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", fresh.AccessToken, nil), http.StatusOK, "the refreshed access token")
	portaltest.Expect(t, p.Do("POST", "/api/v1/token/refresh", "", models.RefreshRequest{RefreshToken: fresh.AccessToken}), http.StatusUnauthorized, "an access token used to refresh")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", fresh.RefreshToken, nil), http.StatusUnauthorized, "a refresh token used as access token")

	// logout-all revokes every token, on every replica.
	other := p.Login(u.Username, pw)
	portaltest.Expect(t, p.Do("POST", "/api/v1/users/me/logout-all", fresh.AccessToken, nil), http.StatusNoContent, "logout-all")
	for name, tk := range map[string]string{"access": other.AccessToken, "same": fresh.AccessToken} {
		// At once on the replica that revoked, within the watch's delay on the other.
		portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", tk, nil), http.StatusUnauthorized, name+" token after logout-all")
		replica.ExpectEnded(t, tk, name+" token after logout-all")
	}
	portaltest.Expect(t, replica.Do("POST", "/api/v1/token/refresh", "", models.RefreshRequest{RefreshToken: other.RefreshToken}), http.StatusUnauthorized, "refresh after logout-all")

	// A password change needs the current password and revokes too.
	tok = p.Login(u.Username, pw)
	newPw := "a brand new password"
	wrongCur := "not my password"
	portaltest.Expect(t, p.Do("PATCH", "/api/v1/users/me", tok.AccessToken, models.UpdateMeRequest{Password: &newPw, CurrentPassword: &wrongCur}), http.StatusForbidden, "password change with a wrong current one")
	portaltest.Expect(t, p.Do("PATCH", "/api/v1/users/me", tok.AccessToken, models.UpdateMeRequest{Password: &newPw, CurrentPassword: &pw}), http.StatusOK, "password change")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusUnauthorized, "a token after the password changed")
	p.Login(u.Username, newPw)
}
