package services

import (
	"slices"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// MemberOf reports whether u is in t: its username is one of the team's members, or it
// is a single sign-on account whose last groups claim (status.groups) names one of the
// team's groups. A local account's status.groups count for nothing: only a provider
// vouches for groups.
func MemberOf(t *portalv1alpha1.Team, u *portalv1alpha1.User) bool {
	if slices.Contains(t.Spec.Members, u.Spec.Username) {
		return true
	}
	if u.Spec.SSO == nil {
		return false
	}
	for _, g := range u.Status.Groups {
		if slices.Contains(t.Spec.Groups, g) {
			return true
		}
	}
	return false
}

// Members returns the users of us that are in t, sorted by username; users being
// deleted are in no team.
func Members(t *portalv1alpha1.Team, us []portalv1alpha1.User) []*portalv1alpha1.User {
	var out []*portalv1alpha1.User
	for i := range us {
		if us[i].DeletionTimestamp.IsZero() && MemberOf(t, &us[i]) {
			out = append(out, &us[i])
		}
	}
	slices.SortFunc(out, func(a, b *portalv1alpha1.User) int { return cmpString(a.Spec.Username, b.Spec.Username) })
	return out
}

// TeamsOf returns the teams of ts that u is in, sorted by name.
func TeamsOf(u *portalv1alpha1.User, ts []portalv1alpha1.Team) []*portalv1alpha1.Team {
	var out []*portalv1alpha1.Team
	for i := range ts {
		if ts[i].DeletionTimestamp.IsZero() && MemberOf(&ts[i], u) {
			out = append(out, &ts[i])
		}
	}
	slices.SortFunc(out, func(a, b *portalv1alpha1.Team) int { return cmpString(a.Name, b.Name) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
