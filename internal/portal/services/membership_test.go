package services

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

func TestMemberOf(t *testing.T) {
	team := &portalv1alpha1.Team{Spec: portalv1alpha1.TeamSpec{Members: []string{"ann"}, Groups: []string{"payments", "ops"}}}
	sso := &portalv1alpha1.SSOIdentity{Issuer: "https://idp.example.com", Subject: "42"}
	tests := map[string]struct {
		user portalv1alpha1.User
		want bool
	}{
		"named member":     {user: portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{Username: "ann"}}, want: true},
		"named SSO member": {user: portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{Username: "ann", SSO: sso}}, want: true},
		"stranger":         {user: portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{Username: "bob"}}},
		"SSO account in a team group": {user: portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{Username: "bob", SSO: sso},
			Status: portalv1alpha1.UserStatus{Groups: []string{"sales", "ops"}}}, want: true},
		"SSO account in other groups": {user: portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{Username: "bob", SSO: sso},
			Status: portalv1alpha1.UserStatus{Groups: []string{"sales"}}}},
		// Only a provider vouches for groups: a local account's status.groups (left by
		// hand, say) makes it nobody's member.
		"local account with groups": {user: portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{Username: "bob"},
			Status: portalv1alpha1.UserStatus{Groups: []string{"ops"}}}},
		"group names match exactly": {user: portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{Username: "bob", SSO: sso},
			Status: portalv1alpha1.UserStatus{Groups: []string{"Ops", "ops-admins"}}}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := MemberOf(team, &tt.user); got != tt.want {
				t.Fatalf("MemberOf = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMembersAndTeamsOf(t *testing.T) {
	sso := &portalv1alpha1.SSOIdentity{Issuer: "https://idp.example.com", Subject: "42"}
	now := metav1.Now()
	users := []portalv1alpha1.User{
		{Spec: portalv1alpha1.UserSpec{Username: "zed", SSO: sso}, Status: portalv1alpha1.UserStatus{Groups: []string{"ops"}}},
		{Spec: portalv1alpha1.UserSpec{Username: "ann"}},
		{Spec: portalv1alpha1.UserSpec{Username: "bob"}},
		{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: portalv1alpha1.UserSpec{Username: "gone"}},
	}
	team := portalv1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "ops"},
		Spec: portalv1alpha1.TeamSpec{Members: []string{"gone", "zed", "ann"}, Groups: []string{"ops"}}}
	var names []string
	for _, u := range Members(&team, users) {
		names = append(names, u.Spec.Username)
	}
	if want := []string{"ann", "zed"}; !slices.Equal(names, want) {
		t.Fatalf("Members = %v, want %v (sorted, the deleted user left out)", names, want)
	}
	teams := []portalv1alpha1.Team{team, {ObjectMeta: metav1.ObjectMeta{Name: "apps"}, Spec: portalv1alpha1.TeamSpec{Members: []string{"ann"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: portalv1alpha1.TeamSpec{Members: []string{"bob"}}}}
	var got []string
	for _, tm := range TeamsOf(&users[1], teams) {
		got = append(got, tm.Name)
	}
	if want := []string{"apps", "ops"}; !slices.Equal(got, want) {
		t.Fatalf("TeamsOf(ann) = %v, want %v", got, want)
	}
}
