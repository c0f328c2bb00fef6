package models

import "time"

// Team is a portal team as the API shows it: who is in it (by name and by single
// sign-on group), the role it grants and where, and who is bound now.
type Team struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Members     []string `json:"members"`
	Groups      []string `json:"groups"`
	Role        string   `json:"role"`
	Namespaces  []string `json:"namespaces"`
	// BoundMembers are the usernames of the accounts in the team now, named or by
	// group: whom its bindings name.
	BoundMembers []string  `json:"boundMembers"`
	CreatedAt    time.Time `json:"createdAt"`
}

// TeamList answers GET /api/v1/teams.
type TeamList struct {
	Items []Team `json:"items"`
}

// CreateTeamRequest is the body of POST /api/v1/teams.
type CreateTeamRequest struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Members     []string `json:"members,omitempty"`
	Groups      []string `json:"groups,omitempty"`
	Role        string   `json:"role"`
	Namespaces  []string `json:"namespaces,omitempty"`
}

// UpdateTeamRequest is the body of PATCH /api/v1/teams/{name}: what is given replaces
// what the team has.
type UpdateTeamRequest struct {
	Description *string   `json:"description,omitempty"`
	Members     *[]string `json:"members,omitempty"`
	Groups      *[]string `json:"groups,omitempty"`
	Role        *string   `json:"role,omitempty"`
	Namespaces  *[]string `json:"namespaces,omitempty"`
}

// TeamMembership is a team the caller is in, as GET /api/v1/users/me shows it.
type TeamMembership struct {
	Name       string   `json:"name"`
	Role       string   `json:"role"`
	Namespaces []string `json:"namespaces"`
}
