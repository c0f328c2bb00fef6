package portal

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/portal/services"
	"github.com/mooringhq/mooring/internal/testutil"
)

// rollout is how long a real rollout on kwok nodes may take on a busy 2-core machine.
const rollout = 2 * time.Minute

func namespace(t *testing.T, e *env, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.admin.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func bindings(t *testing.T, e *env, id string) int {
	t.Helper()
	ctx := context.Background()
	var crbs rbacv1.ClusterRoleBindingList
	var rbs rbacv1.RoleBindingList
	sel := client.MatchingLabels{portalv1alpha1.IDLabel: id}
	if err := e.admin.List(ctx, &crbs, sel); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.List(ctx, &rbs, sel); err != nil {
		t.Fatal(err)
	}
	return len(crbs.Items) + len(rbs.Items)
}

// TestDeveloperAuditorAndNobody walks the story: a developer granted namespace A
// creates an App there that reaches Running, and is refused in B; an auditor reads Apps
// and events everywhere and writes nothing; a user with no role does nothing; deleting a
// user removes their bindings.
func TestDeveloperAuditorAndNobody(t *testing.T) {
	e := setup(t)
	c := e.client(t, 0)
	adm := e.adminToken(t)
	nsA, nsB := namespace(t, e, "portal-a"), namespace(t, e, "portal-b")

	dev, devPw := c.Register("dev")
	devTok := c.Login(dev.Username, devPw).AccessToken
	portaltest.Expect(t, c.Do("POST", "/api/v1/namespaces/"+nsA+"/apps", devTok, portaltest.App("web")), http.StatusForbidden, "an App by a user with no role")
	c.Grant(adm, dev.ID, "developer", nsA)
	portaltest.Expect(t, c.Do("POST", "/api/v1/namespaces/"+nsA+"/apps", devTok, portaltest.App("web")), http.StatusCreated, "an App by a developer in A")
	r := c.Do("POST", "/api/v1/namespaces/"+nsB+"/apps", devTok, portaltest.App("web"))
	portaltest.Expect(t, r, http.StatusForbidden, "an App by a developer in B")
	if e := r.Error(t); e.Code != "Forbidden" || !strings.Contains(e.Message, "cannot create resource \"apps\"") {
		t.Fatalf("want the API server's reason, got %+v", e)
	}
	testutil.Eventually(t, rollout, "the App to reach Running", func() error {
		r := c.Do("GET", "/api/v1/namespaces/"+nsA+"/apps/web", devTok, nil)
		var obj struct {
			Status struct{ Phase string } `json:"status"`
		}
		if r.Status == http.StatusUnauthorized { // the 4s access token expired: log in again
			devTok = c.Login(dev.Username, devPw).AccessToken
			return errorf("token expired, logged in again")
		}
		if r.Decode(t, &obj); obj.Status.Phase != "Running" {
			return errorf("phase %q", obj.Status.Phase)
		}
		return nil
	})

	aud, audPw := c.Register("aud")
	c.Grant(adm, aud.ID, "auditor")
	audTok := c.Login(aud.Username, audPw).AccessToken
	for _, ns := range []string{nsA, nsB} {
		portaltest.Expect(t, c.Do("GET", "/api/v1/namespaces/"+ns+"/apps", audTok, nil), http.StatusOK, "an auditor listing Apps in "+ns)
		portaltest.Expect(t, c.Do("GET", "/api/v1/namespaces/"+ns+"/events", audTok, nil), http.StatusOK, "an auditor listing events in "+ns)
	}
	portaltest.Expect(t, c.Do("PATCH", "/api/v1/namespaces/"+nsA+"/apps/web", audTok, map[string]any{"spec": map[string]any{"replicas": 2}}), http.StatusForbidden, "an auditor patching an App")
	portaltest.Expect(t, c.Do("DELETE", "/api/v1/namespaces/"+nsA+"/apps/web", audTok, nil), http.StatusForbidden, "an auditor deleting an App")
	portaltest.Expect(t, c.Do("POST", "/api/v1/namespaces/"+nsB+"/apps", audTok, portaltest.App("x")), http.StatusForbidden, "an auditor creating an App")

	nobody, nobodyPw := c.Register("nobody")
	nobodyTok := c.Login(nobody.Username, nobodyPw).AccessToken
	for _, path := range []string{"/api/v1/namespaces/" + nsA + "/apps", "/api/v1/namespaces/" + nsA + "/events", "/api/v1/users"} {
		portaltest.Expect(t, c.Do("GET", path, nobodyTok, nil), http.StatusForbidden, "a user with no role: GET "+path)
	}
	var nl models.NamespaceList
	if c.Do("GET", "/api/v1/namespaces", nobodyTok, nil).Decode(t, &nl); len(nl.Items) != 0 {
		t.Fatalf("a user with no role may use no namespace, got %v", nl.Items)
	}

	if n := bindings(t, e, dev.ID); n != 1 {
		t.Fatalf("the developer should have 1 binding, has %d", n)
	}
	// A binding deleted by hand comes back: the leading replica reconciles bindings.
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "mooring-portal-" + dev.ID}}
	if err := e.admin.Delete(context.Background(), rb); err != nil {
		t.Fatalf("delete the developer's RoleBinding by hand: %v", err)
	}
	testutil.Eventually(t, time.Minute, "the hand-deleted RoleBinding to come back", func() error {
		return e.admin.Get(context.Background(), client.ObjectKeyFromObject(rb), rb)
	})
	adm = e.adminToken(t)
	portaltest.Expect(t, c.Do("DELETE", "/api/v1/users/"+dev.ID, adm, nil), http.StatusNoContent, "delete the developer")
	if n := bindings(t, e, dev.ID); n != 0 {
		t.Fatalf("a deleted user keeps %d bindings", n)
	}
}

// TestReplicasShareUsersKeysAndLockouts: what one replica writes, the other enforces.
func TestReplicasShareUsersKeysAndLockouts(t *testing.T) {
	e := setup(t)
	a, b := e.client(t, 0), e.client(t, 1)
	u, pw := a.Register("shared")
	tok := b.Login(u.Username, pw) // a user registered on a, a token signed by b
	portaltest.Expect(t, a.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusOK, "b's token on a")

	// Logout-all on a revokes b's tokens on b.
	portaltest.Expect(t, a.Do("POST", "/api/v1/users/me/logout-all", tok.AccessToken, nil), http.StatusNoContent, "logout-all on a")
	portaltest.Expect(t, a.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusUnauthorized, "a revoked token on a, at once")
	b.ExpectEnded(t, tok.AccessToken, "a revoked token on b, once b's watch brings the revocation")
	portaltest.Expect(t, b.Do("POST", "/api/v1/token/refresh", "", models.RefreshRequest{RefreshToken: tok.RefreshToken}), http.StatusUnauthorized, "a revoked refresh token on b")

	// Three failures on a lock the account on b too, for the client that failed.
	for range 3 {
		portaltest.Expect(t, a.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: u.Username, Password: "not the password"}), http.StatusUnauthorized, "a wrong password")
	}
	testutil.Eventually(t, 20*time.Second, "the lock to show in the User's status", func() error {
		obj := &portalv1alpha1.User{}
		if err := e.admin.Get(context.Background(), client.ObjectKey{Name: u.Username}, obj); err != nil {
			return err
		}
		if !services.Locked(obj, time.Now()) {
			return errorf("failedLogins %d, not locked: %+v", obj.Status.FailedLogins, obj.Status.ClientLockouts)
		}
		return nil
	})
	portaltest.Expect(t, b.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: u.Username, Password: pw}), http.StatusUnauthorized, "the right password on b while locked")
	testutil.Eventually(t, 30*time.Second, "the lock to end", func() error {
		if r := b.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: u.Username, Password: pw}); r.Status != http.StatusOK {
			return errorf("login %d", r.Status)
		}
		return nil
	})
}

func TestTokensExpireAndRefresh(t *testing.T) {
	e := setup(t)
	c := e.client(t, 1)
	u, pw := c.Register("expiry")
	tok := c.Login(u.Username, pw)
	if tok.ExpiresIn != 4 {
		t.Fatalf("expires_in %d, want 4 (--access-token-ttl=4s)", tok.ExpiresIn)
	}
	portaltest.Expect(t, c.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusOK, "a fresh token")
	testutil.Eventually(t, 30*time.Second, "the access token to expire", func() error {
		if r := c.Do("GET", "/api/v1/users/me", tok.AccessToken, nil); r.Status != http.StatusUnauthorized {
			return errorf("still %d", r.Status)
		}
		return nil
	})
	r := c.Do("POST", "/api/v1/token/refresh", "", models.RefreshRequest{RefreshToken: tok.RefreshToken})
	portaltest.Expect(t, r, http.StatusOK, "refresh")
	var fresh models.TokenResponse
	r.Decode(t, &fresh)
	portaltest.Expect(t, e.client(t, 0).Do("GET", "/api/v1/users/me", fresh.AccessToken, nil), http.StatusOK, "the refreshed token on the other replica")
	portaltest.Expect(t, e.client(t, 0).Refresh(tok.RefreshToken), http.StatusUnauthorized, "the spent refresh token on the other replica")
	portaltest.Expect(t, c.Refresh(fresh.RefreshToken), http.StatusUnauthorized, "the session's newest refresh token after its predecessor was reused")
}

// TestTwoReplicasRefreshOneTokenOnceWins sends one refresh token to both replicas at
// the same moment: exactly one answers 200, and the loser's reuse ends the session.
func TestTwoReplicasRefreshOneTokenOnceWins(t *testing.T) {
	e := setup(t)
	a, b := e.client(t, 0), e.client(t, 1)
	u, pw := a.Register("race")
	tok := a.Login(u.Username, pw)
	replies := make([]portaltest.Reply, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range []*portaltest.Client{a, b} {
		wg.Go(func() {
			<-start
			r, err := c.TryDo("POST", "/api/v1/token/refresh", "", models.RefreshRequest{RefreshToken: tok.RefreshToken})
			if err != nil {
				t.Errorf("refresh on replica %d: %v", i, err)
			}
			replies[i] = r
		})
	}
	close(start)
	wg.Wait()
	won, winner := 0, -1
	for i, r := range replies {
		switch r.Status {
		case http.StatusOK:
			won, winner = won+1, i
		case http.StatusUnauthorized:
		default:
			t.Fatalf("replica %d answered %d: %s", i, r.Status, r.Body)
		}
	}
	if won != 1 {
		t.Fatalf("%d of 2 replicas refreshed the same token, want exactly 1", won)
	}
	var fresh models.TokenResponse
	replies[winner].Decode(t, &fresh)
	// The loser may be b, whose ending of the session reaches a through a's watch.
	a.ExpectEnded(t, fresh.AccessToken, "the winner's access token once the loser's reuse ended the session")
	a.Login(u.Username, pw) // the user can log in again
}

// TestRateLimitReturns429ThenRecovers runs a replica of its own with a tight per-IP
// limit, so the other tests' logins do not count.
func TestRateLimitReturns429ThenRecovers(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := e.Start(ctx, "portal-limited.log", "--ip-rate-limit=3", "--rate-limit-window=3s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop the limited replica: %v", err)
		}
	})
	c := portaltest.New(t, p.URL, e.validator)
	body := models.LoginRequest{Username: "nobody-here", Password: "whatever password"}
	for range 3 {
		portaltest.Expect(t, c.Do("POST", "/api/v1/login", "", body), http.StatusUnauthorized, "a login within the limit")
	}
	r := c.Do("POST", "/api/v1/login", "", body)
	portaltest.Expect(t, r, http.StatusTooManyRequests, "the 4th login within 3s")
	if r.Header.Get("Retry-After") == "" || r.Header.Get("RateLimit-Limit") != "3" || r.Header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("want Retry-After and RateLimit-* headers, got %v", r.Header)
	}
	testutil.Eventually(t, 20*time.Second, "the limit to recover", func() error {
		if r := c.Do("POST", "/api/v1/login", "", body); r.Status != http.StatusUnauthorized {
			return errorf("still %d", r.Status)
		}
		return nil
	})
}

// TestPortalIdentityIsConfined uses the portal's own kubeconfig: it may impersonate
// users' ServiceAccounts and role groups, never system:admin or system:masters.
func TestPortalIdentityIsConfined(t *testing.T) {
	e := setup(t)
	for name, imp := range map[string]rest.ImpersonationConfig{
		"system:admin":         {UserName: "system:admin"},
		"group system:masters": {UserName: "system:serviceaccount:mooring-portal-users:u-1", Groups: []string{"system:masters"}},
		"kube-system's SA":     {UserName: "system:serviceaccount:kube-system:default", Groups: []string{"mooring-portal:admin"}},
	} {
		cfg := rest.CopyConfig(e.Config)
		cfg.Impersonate = imp
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{Limit: 1})
		if err == nil || !strings.Contains(err.Error(), "cannot impersonate") {
			t.Errorf("%s: the portal's identity must not impersonate it, got err=%v", name, err)
		}
	}
}
