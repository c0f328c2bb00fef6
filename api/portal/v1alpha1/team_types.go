package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TeamLabel carries a Team's name on the RoleBindings the portal keeps for it, so the
// portal finds a team's bindings with a label selector (and a binding its team).
const TeamLabel = "portal.mooring.dev/team"

// MaxTeamNameLength keeps "mooring-portal-team-<name>", the name of a team's
// RoleBindings, within the 63 characters of a label-safe object name.
const MaxTeamNameLength = 43

// TeamRole is the role a team grants in its namespaces: a namespaced role only (a team
// never makes anyone an admin).
// +kubebuilder:validation:Enum=developer;auditor
type TeamRole string

// TeamSpec is who is in the team and what it is granted.
type TeamSpec struct {
	// Description says what the team is for.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`
	// Members are local usernames in the team.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Members []string `json:"members,omitempty"`
	// Groups are values of the groups claim of single sign-on: an account that logged in
	// with one of them (status.groups of its User) is in the team.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	Groups []string `json:"groups,omitempty"`
	// Role is what every member may do in the team's namespaces.
	Role TeamRole `json:"role"`
	// Namespaces are where the team's role is granted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces,omitempty"`
}

// TeamStatus is what the portal has bound for the team.
type TeamStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Members are the usernames of the accounts bound now, by name or by group, sorted.
	// +optional
	// +listType=set
	Members []string `json:"members,omitempty"`
	// Conditions: Ready is True when every binding of the team is in place.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Team grants a role in some namespaces to a set of portal accounts: local users by
// name and single sign-on users by group. The portal keeps one RoleBinding per
// namespace whose subjects are the members' identities, so the API server decides
// every request of a member as it does for a user's own grants.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 43 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="name must be a DNS label of at most 43 characters"
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaces`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Team struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TeamSpec   `json:"spec,omitempty"`
	Status TeamStatus `json:"status,omitempty"`
}

// TeamList is a list of Teams.
//
// +kubebuilder:object:root=true
type TeamList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Team `json:"items"`
}

var _ runtime.Object = &Team{}
