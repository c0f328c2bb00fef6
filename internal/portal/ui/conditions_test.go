package ui

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// TestConditionsShowTheirHealth: each condition is shown by its polarity: a finished
// rollout (Progressing=False, RolloutComplete) and Ready=True are healthy, a contested
// field (Contested=True) and Ready=False are not, and an App reads as the worst of them.
func TestConditionsShowTheirHealth(t *testing.T) {
	h := newHarness(t)
	h.res.put("team-a", "apps", map[string]any{
		"metadata": map[string]any{"name": "calm", "resourceVersion": "3"},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(1)},
		"status": map[string]any{"phase": "Running", "conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Available", "message": "1 of 1 available"},
			map[string]any{"type": "Progressing", "status": "False", "reason": "RolloutComplete", "message": "All pods run the current spec."},
		}},
	})
	h.res.put("team-a", "apps", map[string]any{
		"metadata": map[string]any{"name": "fight", "resourceVersion": "4"},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(1)},
		"status": map[string]any{"phase": "NotReady", "conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "Rollout", "message": "0 of 1 available"},
			map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "stuck"},
			map[string]any{"type": "Contested", "status": "True", "reason": "OtherWriter", "message": "spec.replicas by kubectl"},
		}},
	})
	a := h.as("dev").get(Prefix + "/ns/team-a")
	wantStatus(t, a, http.StatusOK, "namespace page")
	// The namespace page's line of a healthy App is its health; its conditions, each
	// shown healthy, are on its page.
	wantIn(t, a.body, "a healthy App's line", `data-name="calm" data-phase="Running" data-health="healthy"`,
		`data-name="fight" data-phase="NotReady" data-health="unhealthy"`)
	wantIn(t, h.as("dev").get(Prefix+"/ns/team-a/apps/calm").body, "healthy conditions",
		`<li class="condition healthy"><strong>Progressing</strong> is False (RolloutComplete)`,
		`<li class="condition healthy"><strong>Ready</strong> is True (Available)`)
	wantIn(t, a.body, "unhealthy conditions",
		`<li class="condition unhealthy"><strong>Ready</strong> is False (Rollout)`,
		`<li class="condition unhealthy"><strong>Progressing</strong> is False (ProgressDeadlineExceeded)`,
		`<li class="condition unhealthy"><strong>Contested</strong> is True (OtherWriter)`)
}

// TestAdminUnlocksAUser: a user some client is locked out of is marked on the users
// page, and an admin's Unlock lifts every lock.
func TestAdminUnlocksAUser(t *testing.T) {
	h := newHarness(t)
	until := metav1.NewTime(time.Now().Add(time.Hour))
	h.acc.users["dev"].u.Status.ClientLockouts = []portalv1alpha1.ClientLockout{{Client: "x", FailedLogins: 5, LockedUntil: &until}}
	adm := h.as("admin")
	a := adm.get(Prefix + "/users")
	wantStatus(t, a, http.StatusOK, "users page")
	wantIn(t, a.body, "a locked user", `<span class="tag locked">locked</span>`, `action="/ui/users/id-dev/unlock"`, "Unlock dev")
	wantNotIn(t, a.body, "users that are not locked", `action="/ui/users/id-nobody/unlock"`)
	a = h.as("auditor").post(Prefix+"/users/id-dev/unlock", url.Values{})
	wantStatus(t, a, http.StatusForbidden, "an auditor unlocking")
	a = adm.post(Prefix+"/users/id-dev/unlock", url.Values{})
	wantStatus(t, a, http.StatusSeeOther, "unlock")
	a = adm.get(Prefix + "/users?notice=unlocked")
	wantNotIn(t, a.body, "after the unlock", `action="/ui/users/id-dev/unlock"`)
	wantIn(t, a.body, "after the unlock", "every client may log in again")
}

// TestUsersPagePagesThrough: the users page shows a page of users at a time and links
// to the next page while there are more, so a portal with thousands of users is not one
// page of thousands of forms. (Before, it listed every user and had no link.)
func TestUsersPagePagesThrough(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) { o.UsersPageSize = 3 })
	adm := h.as("admin")
	a := adm.get(Prefix + "/users")
	wantStatus(t, a, http.StatusOK, "users page")
	wantIn(t, a.body, "the first page", `data-user="admin"`, `data-user="auditor"`, `data-user="dev"`,
		`<a href="/ui/users?continue=3" rel="next">Next page</a>`)
	wantNotIn(t, a.body, "the first page", `data-user="nobody"`, "First page")
	a = adm.get(Prefix + "/users?continue=3")
	wantStatus(t, a, http.StatusOK, "the second page")
	wantIn(t, a.body, "the second page", `data-user="nobody"`, `<a href="/ui/users">First page</a>`)
	wantNotIn(t, a.body, "the last page", `data-user="admin"`, "Next page")
	// A refused change on the second page shows the second page again, with the error.
	wantIn(t, a.body, "the second page's forms", `<input type="hidden" name="continue" value="3">`)
	a = adm.post(Prefix+"/users/id-nobody", url.Values{"role": {"developer"}, "namespaces": {"missing"}, "continue": {"3"}})
	wantStatus(t, a, http.StatusUnprocessableEntity, "a refused grant on the second page")
	wantIn(t, a.body, "the second page again", `data-user="nobody"`, `<a href="/ui/users">First page</a>`)
	wantNotIn(t, a.body, "the second page again", `data-user="admin"`)
}
